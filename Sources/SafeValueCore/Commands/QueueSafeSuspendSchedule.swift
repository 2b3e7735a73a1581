/// The `suspend` schedule of a ``QueueSafeValue``: pick a priority.
///
/// It does not keep the holder alive: commands issued after the holder's release fail.
public struct QueueSafeSuspendSchedule<Value: Sendable>: Sendable {
    @usableFromInline
    let storage: ValueStorage<Value>

    @usableFromInline
    init(storage: ValueStorage<Value>) {
        self.storage = storage
    }

    /// Commands that run after every pending highest-priority command.
    @inlinable
    public var lowestPriority: QueueSafeSuspendCommand<Value> {
        QueueSafeSuspendCommand(storage: self.storage, priority: .lowest)
    }

    /// Commands that run before every pending lowest-priority command.
    @inlinable
    public var highestPriority: QueueSafeSuspendCommand<Value> {
        QueueSafeSuspendCommand(storage: self.storage, priority: .highest)
    }
}
