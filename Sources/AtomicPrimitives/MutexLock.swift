/// A non-recursive mutual-exclusion lock built on `pthread_mutex_t`.
///
/// `MutexLock` is the lock every other type in ConcurrencyKit stands on. The mutex lives at a stable heap address
/// for the whole life of the object, every pthread call is checked, and the uncontended path is a try-lock and two
/// plain stores. Prefer ``withLock(_:)``, which cannot forget to unlock:
///
/// ```swift
/// import AtomicPrimitives
///
/// let lock = MutexLock()
/// var hits = 0  // guarded by `lock`
///
/// lock.withLock { hits += 1 }
/// print(lock.withLock { hits })  // 1
/// ```
///
/// > Warning: The lock is not recursive. Calling ``lock()`` or ``withLock(_:)`` on a thread that already holds the
/// > lock would deadlock; instead it traps with a message naming `MutexLock`. Calling ``unlock()`` on a thread
/// > that does not hold the lock traps too.
///
/// Releasing a `MutexLock` is safe in every state, also while it is held.
public final class MutexLock {
    @usableFromInline
    let _core = LockCore()

    /// Creates an unlocked lock.
    public init() {}

    /// Takes the lock, waiting while another thread holds it.
    ///
    /// Pair every call with ``unlock()`` on the same thread, or use ``withLock(_:)``.
    /// - Precondition: The calling thread does not already hold the lock.
    @inlinable
    public func lock() {
        self._core.lock(onReentry: { MutexLock._trapReentry() })
    }

    /// Releases the lock.
    ///
    /// - Precondition: The calling thread holds the lock.
    @inlinable
    public func unlock() {
        if !self._core.isHeldByCurrentThread {
            MutexLock._trapForeignUnlock()
        }
        self._core.unlock()
    }

    /// Takes the lock if it is free, without waiting.
    ///
    /// Called on the thread that already holds the lock, it returns `false`.
    /// - Returns: `true` if the calling thread now holds the lock and must ``unlock()`` it.
    @inlinable
    public func tryLock() -> Bool {
        self._core.tryLock()
    }

    /// Runs `body` while holding the lock, and releases it afterwards, also when `body` throws.
    ///
    /// - Parameter body: The critical section. It runs on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    /// > Warning: Do not take the same lock inside `body`: it traps instead of deadlocking.
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        self._core.lock(onReentry: { MutexLock._trapReentry() })
        defer { self._core.unlock() }
        return try body()
    }

    /// Whether the calling thread holds the lock: for types built on it that name themselves in re-entry traps.
    package var isHeldByCurrentThread: Bool {
        self._core.isHeldByCurrentThread
    }

    @usableFromInline
    static func _trapReentry() -> Never {
        preconditionFailure(
            "MutexLock: lock() or withLock(_:) was called on the thread that already holds this lock. "
                + "MutexLock is not recursive; locking it again would deadlock."
        )
    }

    @usableFromInline
    static func _trapForeignUnlock() -> Never {
        preconditionFailure("MutexLock: unlock() was called on a thread that does not hold this lock.")
    }
}

// Safety: the only state is the pthread mutex and its atomic owner, both made for use from any thread.
extension MutexLock: @unchecked Sendable {}
