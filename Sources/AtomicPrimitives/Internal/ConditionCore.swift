import Dispatch

/// A heap-allocated `pthread_cond_t` for ``CountingSemaphore``, timed against the monotonic clock.
package struct ConditionCore: ~Copyable {
    let condition: UnsafeMutablePointer<CCondition>

    package init() {
        self.condition = .allocate(capacity: 1)
        self.condition.initialize(to: CCondition())
        let result = CLibrary.initialize(self.condition)
        guarantee(result == 0, "pthread_cond_init failed with error \(result)")
    }

    deinit {
        let result = CLibrary.destroy(self.condition)
        guarantee(result == 0, "pthread_cond_destroy failed with error \(result)")
        self.condition.deinitialize(count: 1)
        self.condition.deallocate()
    }

    /// Wakes one waiting thread, if any.
    package func signal() {
        let result = CLibrary.signal(self.condition)
        guarantee(result == 0, "pthread_cond_signal failed with error \(result)")
    }

    /// Wakes every waiting thread.
    package func broadcast() {
        let result = CLibrary.broadcast(self.condition)
        guarantee(result == 0, "pthread_cond_broadcast failed with error \(result)")
    }

    /// Waits for a signal, releasing `mutex` meanwhile; `false` if `deadline` (uptime nanoseconds) passed first.
    func wait(releasing mutex: UnsafeMutablePointer<CMutex>, untilUptimeNanoseconds deadline: UInt64) -> Bool {
        guard deadline != .max else {
            let result = CLibrary.wait(self.condition, releasing: mutex)
            guarantee(result == 0, "pthread_cond_wait failed with error \(result)")
            return true
        }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline > now else { return false }
        let result = CLibrary.wait(self.condition, releasing: mutex, forNanoseconds: deadline - now)
        guarantee(
            result == 0 || result == CLibrary.timedOut,
            "pthread_cond_timedwait failed with error \(result)"
        )
        return result == 0
    }
}
