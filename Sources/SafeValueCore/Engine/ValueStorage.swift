/// The value and its ``TurnEngine``: what pending commands keep alive after the holder is gone.
///
/// Whoever holds the turn may read and write `value` without the lock: every hand-over writes the turn word with
/// release ordering and every new holder reads it with acquire ordering (``TurnEngine/tookTurnOver()``), so each
/// holder sees the writes of the one before, and ThreadSanitizer sees that it does.
@usableFromInline
final class ValueStorage<Value>: @unchecked Sendable {
    // Safety: `value` is only touched by the holder of `engine`'s turn.
    @usableFromInline
    let engine = TurnEngine()

    // The turn, not a runtime check, keeps accesses exclusive; a nested command fails before it touches the value.
    @usableFromInline
    @exclusivity(unchecked)
    var value: Value

    @usableFromInline
    init(_ value: Value) {
        self.value = value
    }

    /// This storage, or `nil` once its holder was released.
    @inlinable
    var ifHolderAlive: ValueStorage<Value>? {
        self.engine.isHolderAlive ? self : nil
    }

    /// Runs a command closure on the value, recording the thread so that a nested `wait` fails fast.
    @inlinable
    func runClosure<Result>(_ body: (inout Value) -> Result) -> Result {
        let previous = self.engine.closureStarted()
        defer { self.engine.closureEnded(previous) }
        return body(&self.value)
    }
}
