// AtomicPrimitives against its baselines, measured in the same process: a heap-allocated pthread_mutex_t,
// Synchronization.Mutex, NSLock and DispatchQueue.sync. Every benchmark does the same work: increment (or read) an
// Int under the lock, 1,000 times per measured iteration; `make bench` turns the results into ratios.

import AtomicPrimitives
import Benchmark
import BenchmarkSupport
import Dispatch
import Foundation
import Synchronization

/// An Int guarded by one of our `MutexLock`s, written exactly like `RawMutexCounter`.
final class MutexLockCounter: @unchecked Sendable {  // Safety: `value` is only touched while `lock` is held.
    let lock = MutexLock()
    var value = 0

    @inline(__always) func increment() { lock.withLock { value &+= 1 } }
}

/// An Int guarded by an `NSLock`.
final class NSLockCounter: @unchecked Sendable {  // Safety: `value` is only touched while `lock` is held.
    let lock = NSLock()
    var value = 0

    @inline(__always) func increment() {
        lock.lock()
        value &+= 1
        lock.unlock()
    }
}

/// An Int confined to a serial `DispatchQueue`.
final class QueueCounter: @unchecked Sendable {  // Safety: `value` is only touched on `queue`.
    let queue = DispatchQueue(label: "bench.counter")
    var value = 0

    @inline(__always) func increment() { queue.sync { value &+= 1 } }
}

/// Runs `operation` `perIteration` times on the benchmark thread and on a second thread at once.
@inline(__always)
func onTwoThreads(_ perIteration: Int, _ operation: @escaping @Sendable () -> Void) {
    let helper = DispatchGroup()
    DispatchQueue.global().async(group: helper) {
        for _ in 0..<perIteration { operation() }
    }
    for _ in 0..<perIteration { operation() }
    helper.wait()
}

let benchmarks: @Sendable () -> Void = {
    // Uncontended increments.
    Benchmark("baseline pthread_mutex increment", configuration: uncontended) { benchmark in
        let counter = RawMutexCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { counter.increment() }
        blackHole(counter.value)
    }
    Benchmark("baseline Synchronization.Mutex increment", configuration: uncontended) { benchmark in
        let counter = Mutex(0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { counter.withLock { $0 &+= 1 } }
        blackHole(counter.withLock { $0 })
    }
    Benchmark("baseline NSLock increment", configuration: uncontended) { benchmark in
        let counter = NSLockCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { counter.increment() }
        blackHole(counter.value)
    }
    Benchmark("baseline DispatchQueue.sync increment", configuration: uncontended) { benchmark in
        let counter = QueueCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { counter.increment() }
        blackHole(counter.value)
    }
    Benchmark("MutexLock.withLock increment", configuration: uncontended) { benchmark in
        let counter = MutexLockCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { counter.increment() }
        blackHole(counter.value)
    }
    Benchmark("AtomicBox.mutate increment", configuration: uncontended) { benchmark in
        let box = AtomicBox(0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { box.mutate { $0 &+= 1 } }
        blackHole(box.value)
    }

    // Uncontended reads.
    Benchmark("baseline pthread_mutex read", configuration: uncontended) { benchmark in
        let counter = RawMutexCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(counter.read()) }
    }
    Benchmark("AtomicBox.value read", configuration: uncontended) { benchmark in
        let box = AtomicBox(0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(box.value) }
    }

    // Two threads contending for one lock.
    Benchmark("baseline pthread_mutex increment 2 threads", configuration: twoThreads) { benchmark in
        let counter = RawMutexCounter()
        benchmark.startMeasurement()
        onTwoThreads(benchmark.scaledIterations.count) { counter.increment() }
        blackHole(counter.value)
    }
    Benchmark("baseline Synchronization.Mutex increment 2 threads", configuration: twoThreads) { benchmark in
        let counter = Mutex(0)
        benchmark.startMeasurement()
        onTwoThreads(benchmark.scaledIterations.count) { counter.withLock { $0 &+= 1 } }
        blackHole(counter.withLock { $0 })
    }
    Benchmark("MutexLock.withLock increment 2 threads", configuration: twoThreads) { benchmark in
        let counter = MutexLockCounter()
        benchmark.startMeasurement()
        onTwoThreads(benchmark.scaledIterations.count) { counter.increment() }
        blackHole(counter.value)
    }
    Benchmark("AtomicBox.mutate increment 2 threads", configuration: twoThreads) { benchmark in
        let box = AtomicBox(0)
        benchmark.startMeasurement()
        onTwoThreads(benchmark.scaledIterations.count) { box.mutate { $0 &+= 1 } }
        blackHole(box.value)
    }
}
