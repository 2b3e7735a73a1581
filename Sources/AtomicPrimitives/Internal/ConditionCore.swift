import Dispatch

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#else
#error("AtomicPrimitives could not identify your C library.")
#endif

/// A heap-allocated `pthread_cond_t` for ``CountingSemaphore``, timed against the monotonic clock.
package struct ConditionCore: ~Copyable {
    let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        self.condition = .allocate(capacity: 1)
        self.condition.initialize(to: pthread_cond_t())
        #if canImport(Darwin)
        let result = pthread_cond_init(self.condition, nil)
        #else
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        defer { pthread_condattr_destroy(&attributes) }
        let clock = pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(clock == 0, "pthread_condattr_setclock failed with error \(clock)")
        let result = pthread_cond_init(self.condition, &attributes)
        #endif
        precondition(result == 0, "pthread_cond_init failed with error \(result)")
    }

    deinit {
        let result = pthread_cond_destroy(self.condition)
        precondition(result == 0, "pthread_cond_destroy failed with error \(result)")
        self.condition.deinitialize(count: 1)
        self.condition.deallocate()
    }

    /// Wakes one waiting thread, if any.
    package func signal() {
        let result = pthread_cond_signal(self.condition)
        precondition(result == 0, "pthread_cond_signal failed with error \(result)")
    }

    /// Wakes every waiting thread.
    package func broadcast() {
        let result = pthread_cond_broadcast(self.condition)
        precondition(result == 0, "pthread_cond_broadcast failed with error \(result)")
    }

    /// Waits for a signal, releasing `mutex` meanwhile; `false` if `deadline` (uptime nanoseconds) passed first.
    func wait(releasing mutex: UnsafeMutablePointer<pthread_mutex_t>, untilUptimeNanoseconds deadline: UInt64) -> Bool {
        guard deadline != .max else {
            let result = pthread_cond_wait(self.condition, mutex)
            precondition(result == 0, "pthread_cond_wait failed with error \(result)")
            return true
        }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline > now else { return false }
        let remaining = deadline - now
        #if canImport(Darwin)
        var relative = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
        let result = pthread_cond_timedwait_relative_np(self.condition, mutex, &relative)
        #else
        var absolute = timespec()
        clock_gettime(CLOCK_MONOTONIC, &absolute)
        let nanoseconds = UInt64(absolute.tv_nsec) + remaining % 1_000_000_000
        absolute.tv_sec += Int(remaining / 1_000_000_000 + nanoseconds / 1_000_000_000)
        absolute.tv_nsec = Int(nanoseconds % 1_000_000_000)
        let result = pthread_cond_timedwait(self.condition, mutex, &absolute)
        #endif
        precondition(result == 0 || result == ETIMEDOUT, "pthread_cond_timedwait failed with error \(result)")
        return result == 0
    }
}
