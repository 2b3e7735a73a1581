/// A value guarded by its own lock: every read is a locked copy, every change a locked closure.
///
/// `AtomicBox` makes compound updates atomic: the whole ``mutate(_:)`` closure runs under the lock, so
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
/// > Warning: Reading ``value`` or calling ``mutate(_:)`` on the same box from inside its own `mutate` closure would
/// > deadlock; it traps instead, before touching the value, with a message naming `AtomicBox`. Work on the closure's
/// > `inout` parameter.
///
/// The box is `Sendable` when its value is.
public final class AtomicBox<Value> {
    @usableFromInline
    let _core = LockCore()

    // The lock, not a runtime check, keeps accesses exclusive: every access holds it, and a nested one traps first.
    @usableFromInline
    @exclusivity(unchecked)
    var _value: Value

    /// Creates a box holding `value`.
    public init(_ value: Value) {
        self._value = value
    }

    /// A copy of the value, read under the lock.
    @inlinable
    public var value: Value {
        self._core.lock(onReentry: { self._trapReentry() })
        defer { self._core.unlock() }
        return self._value
    }

    /// Runs `body` on the value under the lock and returns its result.
    ///
    /// - Parameter body: Gets the value `inout`; changes it makes are kept. It runs on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws. Changes made before the throw are kept.
    @inlinable
    @discardableResult
    public func mutate<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        self._core.lock(onReentry: { self._trapReentry() })
        defer { self._core.unlock() }
        return try body(&self._value)
    }

    /// Whether some thread is inside ``mutate(_:)`` or reading ``value`` at this instant.
    ///
    /// This is a try-lock probe: it is `true` from inside the box's own `mutate` closure too. The answer can be out
    /// of date as soon as it is returned; use it for diagnostics and assertions, not to decide whether to lock.
    public var isMutating: Bool {
        self._core.isLocked
    }

    @usableFromInline
    func _trapReentry() -> Never {
        preconditionFailure(
            "AtomicBox<\(Value.self)>: value or mutate(_:) was used from inside this box's own mutate closure, "
                + "which would deadlock. Use the closure's inout parameter instead."
        )
    }
}

// Safety: `_value` is only read or written while `_core` is locked.
extension AtomicBox: @unchecked Sendable where Value: Sendable {}
