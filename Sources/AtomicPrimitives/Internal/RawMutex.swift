import Synchronization

#if os(Linux)
internal import ConcurrencyKitCShims
#endif

/// The mutual exclusion under ``LockCore``, at the start of the lock's block: on Linux a 32-bit futex word, elsewhere
/// a `pthread_mutex_t`.
///
/// On Linux the word is taken and released exactly as glibc takes and releases a default `pthread_mutex_t` (its
/// `lll_lock`/`lll_unlock`): 0 is free, 1 held, 2 held with threads that may be asleep on it. Taking a free word is one
/// compare-exchange and releasing it one exchange, both inlined into the caller: no call into the C library. A failed
/// take is the sign that the thread may have to sleep, and the wait report records it from there (a thread whose
/// first swap finds the word free after all is listed for that instant only). A releaser that finds 2 wakes one
/// sleeper, which marks the word 2 again as it takes it, so that a later release wakes the next. Nobody spins, as in
/// glibc: contended, it behaves as the `pthread_mutex_t` it replaces. A futex wait that fails other than with `EAGAIN`
/// or `EINTR` traps, as glibc's does.
///
/// Elsewhere the try is `pthread_mutex_trylock` and the wait `pthread_mutex_lock`.
@usableFromInline
package struct RawMutex {
    /// Where the mutex lives: the start of its owner's block, which never moves.
    @usableFromInline
    let address: UnsafeMutableRawPointer

    #if os(Linux)
    /// The bytes the mutex takes.
    @inlinable
    static var size: Int { MemoryLayout<Atomic<UInt32>>.size }
    /// The alignment the mutex needs.
    @inlinable
    static var alignment: Int { MemoryLayout<Atomic<UInt32>>.alignment }

    /// Free; no thread holds it.
    @inlinable
    static var free: UInt32 { 0 }
    /// Held, and nobody has found it held since it was taken.
    @inlinable
    static var held: UInt32 { 1 }
    /// Held, and threads may be asleep on it: its release wakes one.
    @inlinable
    static var contended: UInt32 { 2 }

    /// The futex word.
    @inlinable
    var word: UnsafeMutablePointer<Atomic<UInt32>> {
        self.address.assumingMemoryBound(to: Atomic<UInt32>.self)
    }

    /// Makes a free mutex at `address`, which has ``size`` bytes aligned to ``alignment``.
    static func initialize(at address: UnsafeMutableRawPointer) -> RawMutex {
        address.bindMemory(to: Atomic<UInt32>.self, capacity: 1).initialize(to: Atomic(Self.free))
        return RawMutex(address: address)
    }

    /// Ends the mutex's life, held (`held`) or not: nobody else can reach it any more.
    func destroy(held: Bool) {
        self.word.deinitialize(count: 1)
    }

    /// Takes the mutex if it is free; `false` if it is held.
    @inlinable
    func tryLock() -> Bool {
        self.word.pointee.compareExchange(expected: Self.free, desired: Self.held, ordering: .acquiring).exchanged
    }

    /// Takes the mutex, which a failed ``tryLock()`` found held: sleeps until a release wakes the thread, then marks
    /// the word contended as it takes it, because other sleepers may remain.
    func lockAfterFailedTry() {
        if self.word.pointee.load(ordering: .relaxed) == Self.contended {
            self.sleep()
        }
        while self.word.pointee.exchange(Self.contended, ordering: .acquiring) != Self.free {
            self.sleep()
        }
    }

    /// Sleeps while the word is contended, or until woken.
    private func sleep() {
        let error = ck_futex_wait(self.address, Self.contended)
        guarantee(error == 0, "ConcurrencyKit lock: futex wait failed with error \(error)")
    }

    /// Releases the mutex, which the calling thread holds; wakes one sleeper if the word says there may be one.
    @inlinable
    func unlock() {
        if self.word.pointee.exchange(Self.free, ordering: .releasing) == Self.contended {
            self.wake()
        }
    }

    /// Wakes one thread asleep on the word: out of line, so that the inlined ``unlock()`` stays small.
    @usableFromInline
    @inline(never)
    func wake() {
        ck_futex_wake_one(self.address)
    }

    /// Whether anyone holds the mutex at this instant.
    var isLocked: Bool {
        self.word.pointee.load(ordering: .relaxed) != Self.free
    }
    #else
    /// The bytes the mutex takes.
    @inlinable
    static var size: Int { MemoryLayout<CMutex>.size }
    /// The alignment the mutex needs.
    @inlinable
    static var alignment: Int { MemoryLayout<CMutex>.alignment }

    /// The `pthread_mutex_t`.
    @inlinable
    var mutex: UnsafeMutablePointer<CMutex> {
        self.address.assumingMemoryBound(to: CMutex.self)
    }

    /// Makes a free mutex at `address`, which has ``size`` bytes aligned to ``alignment``.
    static func initialize(at address: UnsafeMutableRawPointer) -> RawMutex {
        let mutex = address.bindMemory(to: CMutex.self, capacity: 1)
        mutex.initialize(to: CMutex())
        let result = CLibrary.initialize(mutex)
        guarantee(result == 0, "pthread_mutex_init failed with error \(result)")
        return RawMutex(address: address)
    }

    /// Ends the mutex's life, held (`held`) or not: nobody else can reach it any more.
    func destroy(held: Bool) {
        if held {
            let result = CLibrary.unlock(self.mutex)
            guarantee(result == 0, "pthread_mutex_unlock failed with error \(result)")
        }
        let result = CLibrary.destroy(self.mutex)
        guarantee(result == 0, "pthread_mutex_destroy failed with error \(result)")
        self.mutex.deinitialize(count: 1)
    }

    /// Takes the mutex if it is free; `false` if it is held.
    @inlinable
    func tryLock() -> Bool {
        let attempt = CLibrary.tryLock(self.mutex)
        guard attempt == 0 else {
            guarantee(attempt == CLibrary.busy, "pthread_mutex_trylock failed with error \(attempt)")
            return false
        }
        return true
    }

    /// Takes the mutex, which a failed ``tryLock()`` found held.
    func lockAfterFailedTry() {
        let result = CLibrary.lock(self.mutex)
        guarantee(result == 0, "pthread_mutex_lock failed with error \(result)")
    }

    /// Releases the mutex, which the calling thread holds.
    @inlinable
    func unlock() {
        let result = CLibrary.unlock(self.mutex)
        guarantee(result == 0, "pthread_mutex_unlock failed with error \(result)")
    }

    /// Whether anyone holds the mutex at this instant: a try-lock probe, released at once if it succeeded.
    var isLocked: Bool {
        guard self.tryLock() else { return true }
        self.unlock()
        return false
    }
    #endif
}
