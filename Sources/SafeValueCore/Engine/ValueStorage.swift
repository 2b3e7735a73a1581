/// The value and its ``TurnEngine``: what pending commands keep alive after the holder is gone.
///
/// Whoever holds the turn may read and write `value` without the lock: the turn is handed over under the engine's
/// lock, and every hand-over goes through a semaphore, a dispatch or a continuation, so each holder sees the writes
/// of the one before.
@usableFromInline
final class ValueStorage<Value>: @unchecked Sendable {
    // Safety: `value` is only touched by the holder of `engine`'s turn.
    @usableFromInline
    let engine = TurnEngine()

    @usableFromInline
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
