import Synchronization

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#else
#error("AtomicPrimitives could not identify your C library.")
#endif

/// A number that identifies the calling thread, never 0, stable for the thread's lifetime.
@inlinable
package func currentThreadID() -> UInt {
    #if canImport(Darwin)
    UInt(bitPattern: pthread_self())
    #elseif canImport(Musl)
    UInt(bitPattern: pthread_self())
    #else
    UInt(pthread_self())
    #endif
}

/// Lets another thread run on this CPU, if one is ready: for waiters that watch a word before they sleep.
package func yieldProcessor() {
    _ = sched_yield()
}

/// How many processors are online, at least 1.
package func onlineProcessorCount() -> Int {
    max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
}

/// The mutex behind ``MutexLock`` and ``AtomicBox``: a heap-allocated `pthread_mutex_t` and its owner.
///
/// The mutex lives at a stable heap address (never `&self.storedMutex`, which is valid for one call only). The owner
/// is recorded after locking and cleared before unlocking, with relaxed atomics: one load and one store to lock, one
/// store to unlock. Before locking, the owner is compared with the caller's thread ID, so that re-entry (a deadlock
/// waiting to happen) becomes a trap. The owner can only equal the caller's ID if the caller itself stored it and has
/// not unlocked since, so the check needs no memory ordering.
@usableFromInline
package struct LockCore: ~Copyable {
    @usableFromInline
    let mutex: UnsafeMutablePointer<pthread_mutex_t>

    @usableFromInline
    let owner: Atomic<UInt>

    @usableFromInline
    package init() {
        self.mutex = .allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(self.mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed with error \(result)")
        self.owner = Atomic(0)
    }

    deinit {
        // Releasing a lock that is still held is allowed: nobody else can reach it any more.
        if self.owner.load(ordering: .relaxed) != 0 {
            let result = pthread_mutex_unlock(self.mutex)
            precondition(result == 0, "pthread_mutex_unlock failed with error \(result)")
        }
        let result = pthread_mutex_destroy(self.mutex)
        precondition(result == 0, "pthread_mutex_destroy failed with error \(result)")
        self.mutex.deinitialize(count: 1)
        self.mutex.deallocate()
    }

    /// Takes the mutex; calls `onReentry` (which must trap) if the calling thread already holds it.
    @inlinable
    package func lock(onReentry: () -> Never) {
        let thread = currentThreadID()
        if self.owner.load(ordering: .relaxed) == thread {
            onReentry()
        }
        let result = pthread_mutex_lock(self.mutex)
        precondition(result == 0, "pthread_mutex_lock failed with error \(result)")
        self.owner.store(thread, ordering: .relaxed)
    }

    /// Takes the mutex if it is free and returns whether it did; never waits.
    @inlinable
    package func tryLock() -> Bool {
        let attempt = pthread_mutex_trylock(self.mutex)
        guard attempt == 0 else {
            precondition(attempt == EBUSY, "pthread_mutex_trylock failed with error \(attempt)")
            return false
        }
        self.owner.store(currentThreadID(), ordering: .relaxed)
        return true
    }

    /// Releases the mutex, which the calling thread holds.
    @inlinable
    package func unlock() {
        self.owner.store(0, ordering: .relaxed)
        let result = pthread_mutex_unlock(self.mutex)
        precondition(result == 0, "pthread_mutex_unlock failed with error \(result)")
    }

    /// Whether the calling thread is the one holding the mutex.
    @inlinable
    package var isHeldByCurrentThread: Bool {
        self.owner.load(ordering: .relaxed) == currentThreadID()
    }

    /// Whether anyone holds the mutex at this instant: a try-lock probe, released at once if it succeeded.
    package var isLocked: Bool {
        let attempt = pthread_mutex_trylock(self.mutex)
        guard attempt == 0 else {
            precondition(attempt == EBUSY, "pthread_mutex_trylock failed with error \(attempt)")
            return true
        }
        let result = pthread_mutex_unlock(self.mutex)
        precondition(result == 0, "pthread_mutex_unlock failed with error \(result)")
        return false
    }

    /// Releases the mutex while waiting on `condition`, and holds it again on return.
    ///
    /// - Parameters:
    ///   - condition: The condition to wait on.
    ///   - deadline: A `DispatchTime.uptimeNanoseconds` value; `UInt64.max` waits without a limit.
    /// - Returns: `false` if the deadline passed, `true` if the condition was signalled (or woke spuriously).
    package func wait(on condition: borrowing ConditionCore, untilUptimeNanoseconds deadline: UInt64) -> Bool {
        let thread = self.owner.load(ordering: .relaxed)
        self.owner.store(0, ordering: .relaxed)
        defer { self.owner.store(thread, ordering: .relaxed) }
        return condition.wait(releasing: self.mutex, untilUptimeNanoseconds: deadline)
    }
}
