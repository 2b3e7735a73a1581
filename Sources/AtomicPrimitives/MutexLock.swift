/// A non-recursive mutual-exclusion lock: on Linux a futex word that behaves as glibc's `pthread_mutex_t`, elsewhere a
/// `pthread_mutex_t`.
///
/// `MutexLock` is the lock every other type in ConcurrencyKit stands on. The mutex lives at a stable heap address
/// for the whole life of the object. On Linux the uncontended path is one compare-exchange to take it and one exchange
/// to release it, inlined into the caller, beside a relaxed check and store of the owner; a thread that finds it held
/// sleeps in the kernel until a release wakes it, as with glibc's default mutex (no spinning, no fairness promised).
/// Tools that hook `pthread_mutex_lock`, such as mutrace or Helgrind, do not see it on Linux; ThreadSanitizer orders
/// through the word's atomics but does not know it as a mutex. Elsewhere every pthread call is checked. Prefer
/// ``withLock(file:line:_:)``, which cannot forget to unlock:
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
/// > Warning: The lock is not recursive. Calling ``lock(file:line:)`` or ``withLock(file:line:_:)`` on a thread that
/// > already holds the lock would deadlock; instead it traps with a message naming `MutexLock`, the lock's `name`,
/// > where it was made and the line where the thread took it, in release builds too. Calling ``unlock()`` on a thread
/// > that does not hold the lock traps too.
///
/// In debug builds the lock joins the lock-order checker (<doc:FindingDeadlocks>): taking two locks in orders that
/// could deadlock is reported, with the lock's `name` and the lines that took it.
///
/// Releasing a `MutexLock` is safe in every state, also while it is held.
public final class MutexLock {
    @usableFromInline
    let _core: LockCore

    /// Creates an unlocked lock.
    ///
    /// - Parameters:
    ///   - file: Where the lock is made, for lock-order reports; leave the default.
    ///   - line: Where the lock is made, for lock-order reports; leave the default.
    public init(file: StaticString = #fileID, line: UInt = #line) {
        self._core = LockCore(type: MutexLock.self, file: file, line: line)
    }

    /// Creates an unlocked lock with a name for lock-order reports.
    ///
    /// - Parameters:
    ///   - name: What lock-order reports call the lock, such as `"cache"`.
    ///   - file: Where the lock is made, for lock-order reports; leave the default.
    ///   - line: Where the lock is made, for lock-order reports; leave the default.
    public init(name: String, file: StaticString = #fileID, line: UInt = #line) {
        self._core = LockCore(name: name, type: MutexLock.self, file: file, line: line)
    }

    /// Creates a lock of a class of locks that are never held two at a time, such as subscribers' delivery locks.
    ///
    /// In debug builds, holding two locks of `peers` at once is reported even if no thread ever nests them the
    /// other way.
    package init(name: String? = nil, peers: LockOrderPeerClass, file: StaticString = #fileID, line: UInt = #line) {
        self._core = LockCore(name: name, type: MutexLock.self, peers: peers, file: file, line: line)
    }

    /// Takes the lock, waiting while another thread holds it.
    ///
    /// Pair every call with ``unlock()`` on the same thread, or use ``withLock(file:line:_:)``.
    /// - Parameters:
    ///   - file: Where the lock is taken, for lock-order reports; leave the default.
    ///   - line: Where the lock is taken, for lock-order reports; leave the default.
    /// - Precondition: The calling thread does not already hold the lock.
    @inlinable
    public func lock(file: StaticString = #fileID, line: UInt = #line) {
        self._core.lock(
            file: file,
            line: line,
            reporting: (UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()), .mutexLock),
            onReentry: { self._trapReentry() }
        )
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
    /// Called on the thread that already holds the lock, it returns `false`. A try-lock never waits, so the lock-order
    /// checker adds no order for it; while held, the lock counts like any other.
    /// - Parameters:
    ///   - file: Where the lock is taken, for lock-order reports; leave the default.
    ///   - line: Where the lock is taken, for lock-order reports; leave the default.
    /// - Returns: `true` if the calling thread now holds the lock and must ``unlock()`` it.
    @inlinable
    public func tryLock(file: StaticString = #fileID, line: UInt = #line) -> Bool {
        self._core.tryLock(file: file, line: line)
    }

    /// Runs `body` while holding the lock, and releases it afterwards, also when `body` throws.
    ///
    /// - Parameters:
    ///   - file: Where the lock is taken, for lock-order reports; leave the default.
    ///   - line: Where the lock is taken, for lock-order reports; leave the default.
    ///   - body: The critical section. It runs on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    /// > Warning: Do not take the same lock inside `body`: it traps instead of deadlocking.
    @inlinable
    public func withLock<Result, Failure: Error>(
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        self._core.lock(
            file: file,
            line: line,
            reporting: (UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()), .mutexWithLock),
            onReentry: { self._trapReentry() }
        )
        defer { self._core.unlock() }
        return try body()
    }

    /// Whether the calling thread holds the lock: for types built on it that name themselves in re-entry traps.
    package var isHeldByCurrentThread: Bool {
        self._core.isHeldByCurrentThread
    }

    /// The lock's serial number in the lock-order graph (0 in release builds): for tests of the checker.
    package var lockOrderSerial: UInt64 {
        self._core.lockOrderSerial
    }

    @usableFromInline
    func _trapReentry() -> Never {
        halt(
            "MutexLock\(self._core.reentryDescription): lock() or withLock(_:) was called on the thread that already "
                + "holds this lock. MutexLock is not recursive; locking it again would deadlock."
        )
    }

    @usableFromInline
    static func _trapForeignUnlock() -> Never {
        halt("MutexLock: unlock() was called on a thread that does not hold this lock.")
    }
}

// Safety: the only state is the mutex and its atomic owner, both made for use from any thread.
extension MutexLock: @unchecked Sendable {}

extension MutexLock: WaitTarget {
    package var waitResource: WaitReport.Resource {
        self._core.waitResource(of: self, type: "MutexLock")
    }

    package var waitHolding: WaitHolding {
        self._core.waitHolding
    }
}
