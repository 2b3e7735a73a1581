// AtomicPrimitives against its baselines, measured in the same process: a heap-allocated pthread_mutex_t,
// Synchronization.Mutex, NSLock and DispatchQueue.sync. Every benchmark does the same work: increment (or read) an
// Int under the lock, 1,000 times per measured iteration; `make bench` turns the results into ratios.

import AtomicPrimitives
import Benchmark
import BenchmarkSupport
import Dispatch
import Foundation
import Synchronization

/// An Int guarded by one of our `MutexLock`s, written exactly like `PthreadMutexCounter`.
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

/// groue/Semaphore's design, written here so that the library's async face has its baseline in the same process: a
/// lock, a count, and a line of continuations.
final class ContinuationSemaphore: @unchecked Sendable {  // Safety: every var is only touched while `lock` is held.
    private let lock = NSLock()
    private var value: Int
    private var waiters: [UnsafeContinuation<Void, Never>] = []
    /// Signals that found the count negative before their waiter had joined the line.
    private var earlyResumes = 0

    init(value: Int) { self.value = value }

    func wait() async {
        let passes = self.lock.withLock { () -> Bool in
            self.value -= 1
            return self.value >= 0
        }
        if passes { return }
        await withUnsafeContinuation { continuation in
            let resumeNow = self.lock.withLock { () -> Bool in
                if self.earlyResumes > 0 {
                    self.earlyResumes -= 1
                    return true
                }
                self.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func signal() {
        let waiter = self.lock.withLock { () -> UnsafeContinuation<Void, Never>? in
            self.value += 1
            guard self.value <= 0 else { return nil }
            if self.waiters.isEmpty {
                self.earlyResumes += 1
                return nil
            }
            return self.waiters.removeFirst()
        }
        waiter?.resume()
    }
}

let benchmarks: @Sendable () -> Void = {
    // Uncontended increments.
    Benchmark("baseline pthread_mutex increment", configuration: uncontended) { benchmark in
        let counter = PthreadMutexCounter()
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
        let counter = PthreadMutexCounter()
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
        let counter = PthreadMutexCounter()
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

    // Async wait and signal, uncontended: a resource is always free.
    Benchmark("baseline continuation semaphore async wait+signal", configuration: uncontended) { benchmark async in
        let semaphore = ContinuationSemaphore(value: 1)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            await semaphore.wait()
            semaphore.signal()
        }
    }
    Benchmark("CountingSemaphore async wait+signal", configuration: uncontended) { benchmark async in
        let semaphore = CountingSemaphore(.binary)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try? await semaphore.wait()
            semaphore.signal()
        }
    }
}
