// DispatchKit against raw Dispatch in the same process. 1,000 operations per measured iteration.

import Benchmark
import BenchmarkSupport
import Dispatch
import DispatchKit

/// A counter confined to one queue, bumped by the measured blocks.
final class Confined: @unchecked Sendable {  // Safety: `value` is only touched on the queue under test.
    var value = 0
}

var asyncRounds: Benchmark.Configuration {
    .init(metrics: [.wallClock], scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 2_000)
}

/// Sends `count` increments with `send`, the last of which signals; waits for it.
func sendAll(_ count: Int, _ send: (@escaping @Sendable () -> Void) -> Void, counter: Confined) {
    let finished = DispatchSemaphore(value: 0)
    for index in 0..<count {
        send {
            counter.value &+= 1
            if index == count - 1 { finished.signal() }
        }
    }
    finished.wait()
}

let benchmarks: @Sendable () -> Void = {
    Benchmark("baseline DispatchQueue.async", configuration: asyncRounds) { benchmark in
        let queue = DispatchQueue(label: "bench.raw.async")
        let counter = Confined()
        benchmark.startMeasurement()
        sendAll(benchmark.scaledIterations.count, { queue.async(execute: $0) }, counter: counter)
    }
    Benchmark("GCDQueue.async", configuration: asyncRounds) { benchmark in
        let queue = GCDQueue(name: "bench.gcd.async")
        let counter = Confined()
        benchmark.startMeasurement()
        sendAll(benchmark.scaledIterations.count, { queue.async($0) }, counter: counter)
    }
    Benchmark("baseline DispatchQueue.sync", configuration: uncontended) { benchmark in
        let queue = DispatchQueue(label: "bench.raw.sync")
        let counter = Confined()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { queue.sync { counter.value &+= 1 } }
        blackHole(counter.value)
    }
    Benchmark("GCDQueue.sync", configuration: uncontended) { benchmark in
        let queue = GCDQueue(name: "bench.gcd.sync")
        let counter = Confined()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { queue.sync { counter.value &+= 1 } }
        blackHole(counter.value)
    }
    Benchmark("GCDQueue.isCurrent inside", configuration: uncontended) { benchmark in
        let queue = GCDQueue(name: "bench.gcd.current")
        queue.dispatchQueue.sync {
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(queue.isCurrent) }
            benchmark.stopMeasurement()
        }
    }
    Benchmark("GCDQueue.isCurrent outside", configuration: uncontended) { benchmark in
        let queue = GCDQueue(name: "bench.gcd.elsewhere")
        blackHole(queue.isCurrent)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(queue.isCurrent) }
    }
}
