// SafeValueCore against its baselines in the same process: a bare pthread mutex for the wait schedule, and
// DispatchQueue.async for the async schedule. 1,000 operations per measured iteration unless a name says otherwise.

import Benchmark
import BenchmarkSupport
import Dispatch
import SafeValueCore

/// Holds `value` with a manual-completion command until `release()`, so that commands issued meanwhile wait.
final class Hold: @unchecked Sendable {  // Safety: `done` is written before `held` is signalled, read after.
    private var done: CommandCompletionClosure?

    init(_ value: QueueSafeValue<Int>, on queue: DispatchQueue) {
        let held = DispatchSemaphore(value: 0)
        value.async(performIn: queue).highestPriority.set(manualCompletion: { _, finish in
            self.done = finish
            held.signal()
        })
        held.wait()
    }

    func release() { self.done?() }
}

/// Issues `count` async increments while the value is held, releases it, and waits until the last has run.
func drainPending(_ value: QueueSafeValue<Int>, count: Int, on queue: DispatchQueue) {
    let hold = Hold(value, on: queue)
    let finished = DispatchSemaphore(value: 0)
    let command = value.async(performIn: queue).lowestPriority
    for index in 0..<count {
        if index == count - 1 {
            command.set(accessClosure: { $0 &+= 1 }, completion: { _ in finished.signal() })
        } else {
            command.set(accessClosure: { $0 &+= 1 })
        }
    }
    hold.release()
    finished.wait()
}

/// An Int confined to a serial queue: the baseline for the async schedule.
final class QueueConfined: @unchecked Sendable {  // Safety: `value` is only touched on `queue`.
    let queue = DispatchQueue(label: "bench.confined")
    var value = 0
}

var asyncRounds: Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 2_000
    )
}

var batches: Benchmark.Configuration {
    .init(metrics: [.wallClock], maxDuration: .seconds(2), maxIterations: 200)
}

let benchmarks: @Sendable () -> Void = {
    pinToOneCPU()
    Benchmark("baseline pthread_mutex read", configuration: uncontended) { benchmark in
        let counter = PthreadMutexCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(counter.read()) }
    }
    Benchmark("baseline pthread_mutex increment", configuration: uncontended) { benchmark in
        let counter = PthreadMutexCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { counter.increment() }
        blackHole(counter.value)
    }
    Benchmark("QueueSafeValue wait get", configuration: uncontended) { benchmark in
        let value = QueueSafeValue(value: 0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(value.wait.lowestPriority.get()) }
    }
    Benchmark("QueueSafeValue wait set(newValue:)", configuration: uncontended) { benchmark in
        let value = QueueSafeValue(value: 0)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { blackHole(value.wait.lowestPriority.set(newValue: index)) }
    }
    Benchmark("QueueSafeValue suspend get", configuration: uncontended) { benchmark async in
        let value = QueueSafeValue(value: 0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(await value.suspend.lowestPriority.get()) }
    }

    // The async schedule: 1,000 increments sent to a serial queue, until the last has run.
    Benchmark("baseline DispatchQueue.async increment", configuration: asyncRounds) { benchmark in
        let confined = QueueConfined()
        let finished = DispatchSemaphore(value: 0)
        benchmark.startMeasurement()
        let count = benchmark.scaledIterations.count
        for index in 0..<count {
            confined.queue.async {
                confined.value &+= 1
                if index == count - 1 { finished.signal() }
            }
        }
        finished.wait()
    }
    Benchmark("QueueSafeValue async set(accessClosure:) increment", configuration: asyncRounds) { benchmark in
        let value = QueueSafeValue(value: 0)
        let queue = DispatchQueue(label: "bench.async")
        let finished = DispatchSemaphore(value: 0)
        let command = value.async(performIn: queue).lowestPriority
        benchmark.startMeasurement()
        let count = benchmark.scaledIterations.count
        for index in 0..<count {
            if index == count - 1 {
                command.set(accessClosure: { $0 &+= 1 }, completion: { _ in finished.signal() })
            } else {
                command.set(accessClosure: { $0 &+= 1 })
            }
        }
        finished.wait()
    }

    // Queue depth: 10,000 commands per measured iteration, pending 10 at a time or all at once.
    Benchmark("QueueSafeValue 10000 commands 10 pending", configuration: batches) { benchmark in
        let value = QueueSafeValue(value: 0)
        let queue = DispatchQueue(label: "bench.depth.10")
        benchmark.startMeasurement()
        for _ in 0..<1_000 { drainPending(value, count: 10, on: queue) }
    }
    Benchmark("QueueSafeValue 10000 commands 10000 pending", configuration: batches) { benchmark in
        let value = QueueSafeValue(value: 0)
        let queue = DispatchQueue(label: "bench.depth.10000")
        benchmark.startMeasurement()
        drainPending(value, count: 10_000, on: queue)
    }
}
