// DispatchKit against raw Dispatch in the same process, pinned to one CPU. 1,000 operations per measured iteration.

import Benchmark
import BenchmarkSupport
import Dispatch
import DispatchKit

/// A counter confined to one queue, bumped by the measured blocks.
final class Confined: @unchecked Sendable {  // Safety: `value` is only touched on the queue under test.
    var value = 0
}

var asyncRounds: Benchmark.Configuration {
    .init(
        metrics: [.wallClock],
        warmupIterations: 100,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 5_000
    )
}

/// Measures sending 1,000 increments with `send` to `queue` while it is suspended; then resumes it and waits,
/// unmeasured, for the blocks to run.
///
/// What `async` costs the caller is the submission: the blocks' run is the same for every queue. Measured with the
/// queue running, its thread wakes and sleeps again between blocks, which moves from one run to the next by more
/// than the differences measured here. Every increment is the same closure, so that the only allocations measured
/// are the ones the queue makes.
func sendAll(
    _ benchmark: Benchmark,
    to queue: DispatchQueue,
    _ send: (@escaping @Sendable () -> Void) -> Void
) {
    let counter = Confined()
    let increment: @Sendable () -> Void = { counter.value &+= 1 }
    let finished = DispatchSemaphore(value: 0)
    queue.suspend()
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations { send(increment) }
    benchmark.stopMeasurement()
    queue.async { finished.signal() }
    queue.resume()
    finished.wait()
    blackHole(counter.value)
}

let benchmarks: @Sendable () -> Void = {
    pinToOneCPU()
    // Each queue is made once, so that no measured iteration pays for making or releasing one.
    let rawAsyncQueue = DispatchQueue(label: "bench.raw.async")
    Benchmark("baseline DispatchQueue.async", configuration: asyncRounds) { benchmark in
        sendAll(benchmark, to: rawAsyncQueue) { rawAsyncQueue.async(execute: $0) }
    }
    let asyncQueue = GCDQueue(name: "bench.gcd.async")
    Benchmark("GCDQueue.async", configuration: asyncRounds) { benchmark in
        sendAll(benchmark, to: asyncQueue.dispatchQueue) { asyncQueue.async($0) }
    }
    let rawSyncQueue = DispatchQueue(label: "bench.raw.sync")
    Benchmark("baseline DispatchQueue.sync", configuration: uncontended) { benchmark in
        let counter = Confined()
        for _ in benchmark.scaledIterations { rawSyncQueue.sync { counter.value &+= 1 } }
        blackHole(counter.value)
    }
    let syncQueue = GCDQueue(name: "bench.gcd.sync")
    Benchmark("GCDQueue.sync", configuration: uncontended) { benchmark in
        let counter = Confined()
        for _ in benchmark.scaledIterations { syncQueue.sync { counter.value &+= 1 } }
        blackHole(counter.value)
    }
    // What a user writes to ask "am I on this queue?" without DispatchKit: a queue-specific key of their own.
    let specificKey = DispatchSpecificKey<Int>()
    let specificQueue = DispatchQueue(label: "bench.raw.specific")
    specificQueue.setSpecific(key: specificKey, value: 1)
    Benchmark("baseline DispatchQueue.getSpecific inside", configuration: uncontended) { benchmark in
        specificQueue.sync {
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(DispatchQueue.getSpecific(key: specificKey) != nil) }
            benchmark.stopMeasurement()
        }
    }
    let currentQueue = GCDQueue(name: "bench.gcd.current")
    Benchmark("GCDQueue.isCurrent inside", configuration: uncontended) { benchmark in
        currentQueue.dispatchQueue.sync {
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(currentQueue.isCurrent) }
            benchmark.stopMeasurement()
        }
    }
    Benchmark("GCDQueue.isCurrent outside", configuration: uncontended) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(currentQueue.isCurrent) }
    }
}
