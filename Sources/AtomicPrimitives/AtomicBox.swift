/// A value guarded by its own lock: every read is a locked copy, every change a locked closure.
///
/// `AtomicBox` makes compound updates atomic: the whole ``mutate(file:line:_:)`` closure runs under the lock, so
/// read-modify-write sequences such as `+= 1` or "append if absent" cannot interleave with another thread's.
///
/// ```swift
/// import AtomicPrimitives
/// import Dispatch
///
/// let hits = AtomicBox(0)
/// DispatchQueue.concurrentPerform(iterations: 8) { _ in
///     hits.mutate { $0 += 1 }
/// }
/// print(hits.value)  // 8
/// ```
///
/// > Warning: Reading ``value`` or calling ``mutate(file:line:_:)`` on the same box from inside its own `mutate` closure would
/// > deadlock; it traps instead, before touching the value, with a message naming `AtomicBox`, the box's `name`, where
/// > it was made and where its `mutate` began, in release builds too. Work on the closure's `inout` parameter.
///
/// In debug builds the box's lock joins the lock-order checker (<doc:FindingDeadlocks>); give it a `name` to make
/// reports easy to read.
///
/// The value lives in one heap block with the lock, as in `NIOLockedValueBox`: taking the lock and changing the value
/// touch the same memory.
///
/// The box is `Sendable` when its value is.
public final class AtomicBox<Value> {
    /// The lock, whose block holds the value as its payload.
    @usableFromInline
    let _core: LockCore

    /// The value's address in `_core`'s block.
    ///
    /// The lock, not a runtime check, keeps accesses exclusive: every access holds it, and a nested one traps first.
    @inlinable
    var _value: UnsafeMutablePointer<Value> {
        self._core.payload(Value.self)
    }

    /// The layout the lock makes room for.
    private static var payload: LockCore.PayloadLayout {
        (MemoryLayout<Value>.size, MemoryLayout<Value>.alignment)
    }

    /// Creates a box holding `value`.
    ///
    /// - Parameters:
    ///   - value: The initial value.
    ///   - file: Where the box is made, for lock-order reports; leave the default.
    ///   - line: Where the box is made, for lock-order reports; leave the default.
    public init(_ value: Value, file: StaticString = #fileID, line: UInt = #line) {
        self._core = LockCore(type: AtomicBox.self, payload: Self.payload, file: file, line: line)
        self._value.initialize(to: value)
    }

    /// Creates a box holding `value`, with a name for lock-order reports.
    ///
    /// - Parameters:
    ///   - value: The initial value.
    ///   - name: What lock-order reports call the box's lock, such as `"hits"`.
    ///   - file: Where the box is made, for lock-order reports; leave the default.
    ///   - line: Where the box is made, for lock-order reports; leave the default.
    public init(_ value: Value, name: String, file: StaticString = #fileID, line: UInt = #line) {
        self._core = LockCore(name: name, type: AtomicBox.self, payload: Self.payload, file: file, line: line)
        self._value.initialize(to: value)
    }

    /// Creates a box whose lock is outside the lock-order checker and schedule chaos: for the diagnostics' own state.
    package init(_ value: Value, unobserved: ()) {
        self._core = LockCore(unobserved: (), payload: Self.payload)
        self._value.initialize(to: value)
    }

    /// Creates a box whose lock belongs to a class of locks that are never held two at a time.
    package init(
        _ value: Value,
        name: String? = nil,
        peers: LockOrderPeerClass,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        self._core = LockCore(
            name: name,
            type: AtomicBox.self,
            peers: peers,
            payload: Self.payload,
            file: file,
            line: line
        )
        self._value.initialize(to: value)
    }

    deinit {
        // Before `_core` frees the block: nobody else can reach the box any more, so no lock is needed.
        self._value.deinitialize(count: 1)
    }

    /// A copy of the value, read under the lock.
    @inlinable
    public var value: Value {
        self._core.lock(
            file: "AtomicBox.value",
            line: 0,
            reporting: (UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()), .boxValue),
            onReentry: { self._trapReentry() }
        )
        defer { self._core.unlock() }
        return self._value.pointee
    }

    /// Runs `body` on the value under the lock and returns its result.
    ///
    /// - Parameters:
    ///   - file: Where the box is used, for lock-order reports; leave the default.
    ///   - line: Where the box is used, for lock-order reports; leave the default.
    ///   - body: Gets the value `inout`; changes it makes are kept. It runs on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws. Changes made before the throw are kept.
    @inlinable
    @discardableResult
    public func mutate<Result, Failure: Error>(
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        self._core.lock(
            file: file,
            line: line,
            reporting: (UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()), .boxMutate),
            onReentry: { self._trapReentry() }
        )
        defer { self._core.unlock() }
        return try body(&self._value.pointee)
    }

    /// Whether some thread is inside ``mutate(file:line:_:)`` or reading ``value`` at this instant.
    ///
    /// This is a probe of the lock (one load of its word on Linux, a try-lock elsewhere) that never waits: it is
    /// `true` from inside the box's own `mutate` closure too. The answer can be out of date as soon as it is returned;
    /// use it for diagnostics and assertions, not to decide whether to lock.
    public var isMutating: Bool {
        self._core.isLocked
    }

    @usableFromInline
    func _trapReentry() -> Never {
        halt(
            "AtomicBox<\(Value.self)>\(self._core.reentryDescription): value or mutate(_:) was used from inside this "
                + "box's own mutate closure, which would deadlock. Use the closure's inout parameter instead."
        )
    }
}

// Safety: the value in `_core`'s block is only read or written while `_core` is locked.
extension AtomicBox: @unchecked Sendable where Value: Sendable {}

extension AtomicBox: WaitTarget {
    package var waitResource: WaitReport.Resource {
        self._core.waitResource(of: self, type: "AtomicBox<\(Value.self)>")
    }

    package var waitHolding: WaitHolding {
        self._core.waitHolding
    }
}
