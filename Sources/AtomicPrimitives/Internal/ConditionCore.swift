import Dispatch

/// A heap-allocated `pthread_mutex_t` and `pthread_cond_t`, timed against the monotonic clock: where a
/// ``ParkedThread`` sleeps until its grant wakes it.
///
/// Outside the lock-order graph and schedule chaos, as the diagnostics' own locks are.
package struct ConditionCore: ~Copyable {
    /// The mutex the condition releases while a thread waits.
    let mutex: UnsafeMutablePointer<CMutex>
    /// The condition a sleeper waits on.
    let condition: UnsafeMutablePointer<CCondition>

    package init() {
        self.mutex = .allocate(capacity: 1)
        self.mutex.initialize(to: CMutex())
        let mutexInit = CLibrary.initialize(self.mutex)
        guarantee(mutexInit == 0, "pthread_mutex_init failed with error \(mutexInit)")
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
        let mutexDestroy = CLibrary.destroy(self.mutex)
        guarantee(mutexDestroy == 0, "pthread_mutex_destroy failed with error \(mutexDestroy)")
        self.mutex.deinitialize(count: 1)
        self.mutex.deallocate()
    }

    /// Takes the mutex.
    package func lock() {
        let result = CLibrary.lock(self.mutex)
        guarantee(result == 0, "pthread_mutex_lock failed with error \(result)")
    }

    /// Releases the mutex, which the calling thread holds.
    package func unlock() {
        let result = CLibrary.unlock(self.mutex)
        guarantee(result == 0, "pthread_mutex_unlock failed with error \(result)")
    }

    /// Wakes one waiting thread, if any.
    package func signal() {
        let result = CLibrary.signal(self.condition)
        guarantee(result == 0, "pthread_cond_signal failed with error \(result)")
    }

    /// Waits for a signal, releasing the mutex, which the calling thread holds, meanwhile and holding it again on
    /// return; `false` if `deadline` (uptime nanoseconds) passed first, `true` if signalled (or woken spuriously).
    package func wait(untilUptimeNanoseconds deadline: UInt64) -> Bool {
        guard deadline != .max else {
            let result = CLibrary.wait(self.condition, releasing: self.mutex)
            guarantee(result == 0, "pthread_cond_wait failed with error \(result)")
            return true
        }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline > now else { return false }
        let result = CLibrary.wait(self.condition, releasing: self.mutex, forNanoseconds: deadline - now)
        guarantee(
            result == 0 || result == CLibrary.timedOut,
            "pthread_cond_timedwait failed with error \(result)"
        )
        return result == 0
    }
}
