/// A `get()` or `set(newValue:)` that waits for the turn, with what it must do to the value and, once applied, its
/// result: a ``CombinedCommand`` that knows the value's type.
@usableFromInline
final class CombinedValueCommand<Value>: CombinedCommand, @unchecked Sendable {
    /// What a command that passes no closure does to the value.
    @usableFromInline
    enum Operation {
        /// Reads the value.
        case get
        /// Replaces the value.
        case set(Value)

        /// Does it to `value`, and returns the value as the command's result.
        @inlinable
        func apply(to value: inout Value) -> Value {
            if case .set(let newValue) = self { value = newValue }
            return value
        }
    }

    // Safety: the issuer keeps the storage alive while its command waits, and only the releaser, holding the turn,
    // applies the command.
    @usableFromInline
    unowned(unsafe) let storage: ValueStorage<Value>
    // Safety: see ``CombinedCommand``: written before the command is queued, or by the releaser before the wake.
    @usableFromInline
    var operation: Operation
    /// The value after the command, once applied.
    @usableFromInline
    var result: Value?
    /// The value a `set` replaced, once applied: the issuer destroys it on its own thread (``takeResult()``), as an
    /// uncombined `set` does, so that no `deinit` of the user's runs on the releaser's thread, in its locks, queue or
    /// actor.
    @usableFromInline
    var replaced: Value?

    @usableFromInline
    init(storage: ValueStorage<Value>, operation: Operation) {
        self.storage = storage
        self.operation = operation
    }

    /// Applies the command for the releaser, which holds the turn: a `set` swaps the new value in and keeps the old
    /// one for the issuer, so that nothing of the user's runs here.
    override func apply() {
        let operation = self.operation
        self.operation = .get  // the new value now lives in the storage only
        var replaced: Value?
        self.result = self.storage.runClosure { value in
            if case .set(let newValue) = operation {
                replaced = value
                value = newValue
            }
            return value
        }
        self.replaced = replaced
    }

    /// For the issuer, woken with its command applied: destroys the value a `set` replaced, here, on the issuer's
    /// thread, and returns the result, leaving the command holding no value, whoever releases it last.
    @inlinable
    func takeResult() -> Value {
        _ = self.wasApplied  // pairs with the releaser's publishing it
        self.replaced = nil
        defer { self.result = nil }
        return self.result.unsafelyUnwrapped
    }
}
