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

    @usableFromInline
    init(storage: ValueStorage<Value>, operation: Operation) {
        self.storage = storage
        self.operation = operation
    }

    /// Applies the command for the releaser, recorded as a command closure: replacing the value may run the old
    /// value's `deinit`, and a `wait` from there must fail fast.
    override func apply() {
        let operation = self.operation
        self.operation = .get  // the new value now lives in the storage only
        self.result = self.storage.runClosure { value in operation.apply(to: &value) }
    }
}
