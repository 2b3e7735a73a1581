// CallbackRouting against its baselines in the same process: calling a block directly, and Thread.isMainThread.
// Every benchmark does its operation 1,000 times per measured iteration.

import Benchmark
import BenchmarkSupport
import CallbackRouting
import Foundation

/// A counter the measured blocks bump, so that the calls cannot be optimized away.
final class Hits: @unchecked Sendable {  // Safety: only touched from the benchmark's own thread.
    var count = 0
}

let benchmarks: @Sendable () -> Void = {
    Benchmark("baseline direct block call", configuration: uncontended) { benchmark in
        let hits = Hits()
        let block: @Sendable () -> Void = { hits.count &+= 1 }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { block() }
        blackHole(hits.count)
    }
    Benchmark("CallbackQueue.untouch.execute", configuration: uncontended) { benchmark in
        let hits = Hits()
        let block: @Sendable () -> Void = { hits.count &+= 1 }
        let route = CallbackQueue.untouch
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { route.execute(block) }
        blackHole(hits.count)
    }
    Benchmark("baseline Thread.isMainThread", configuration: uncontended) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(Thread.isMainThread) }
    }
    Benchmark("CallbackQueue.isOnMainQueue", configuration: uncontended) { benchmark in
        blackHole(CallbackQueue.isOnMainQueue)  // sets the main-queue key once, outside the measurement
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(CallbackQueue.isOnMainQueue) }
    }
    Benchmark("CallbackSubject.send to 10 untouch subscribers", configuration: uncontended) { benchmark in
        let subject = CallbackSubject<Int, Never>()
        let subscriptions = (0..<10).map { _ in subject.subscribe { blackHole($0) } }
        subject.send(0)  // the mailboxes take their storage once, outside the measurement
        benchmark.startMeasurement()
        for value in benchmark.scaledIterations { subject.send(value) }
        benchmark.stopMeasurement()
        withExtendedLifetime(subscriptions) {}
    }
}
