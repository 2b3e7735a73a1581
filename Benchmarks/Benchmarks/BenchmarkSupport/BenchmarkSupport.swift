// What several benchmark targets share: the same-process baselines and the measurement configurations.

import Benchmark

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An Int guarded by a bare heap-allocated pthread mutex: the baseline everything is compared with.
///
/// Its methods are `@inlinable`, so that they inline into each benchmark exactly as our own hot paths do.
public final class RawMutexCounter: @unchecked Sendable {  // Safety: `value` is only touched while `mutex` is held.
    @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// The guarded value; read it under the mutex, or after every thread has finished.
    public var value = 0

    /// Creates a counter at 0 with an initialized mutex.
    public init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Adds one under the mutex.
    @inlinable public func increment() {
        pthread_mutex_lock(mutex)
        value &+= 1
        pthread_mutex_unlock(mutex)
    }

    /// Reads the value under the mutex.
    @inlinable public func read() -> Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return value
    }
}

/// 1,000 operations per measured iteration, on one thread; wall clock and mallocs.
public var uncontended: Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 100_000
    )
}

/// 1,000 operations per thread per measured iteration, on two threads; wall clock.
public var twoThreads: Benchmark.Configuration {
    .init(metrics: [.wallClock], scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 10_000)
}
