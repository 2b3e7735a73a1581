/// The `wait` schedule of a ``QueueSafeValue``: pick a priority.
///
/// It does not keep the holder alive: commands issued after the holder's release fail.
public struct QueueSafeWaitSchedule<Value> {
    @usableFromInline
    let storage: ValueStorage<Value>

    @usableFromInline
    init(storage: ValueStorage<Value>) {
        self.storage = storage
    }

    /// Commands that run after every pending highest-priority command.
    @inlinable
    public var lowestPriority: QueueSafeWaitCommand<Value> {
        QueueSafeWaitCommand(storage: self.storage, priority: .lowest)
    }

    /// Commands that run before every pending lowest-priority command.
    @inlinable
    public var highestPriority: QueueSafeWaitCommand<Value> {
        QueueSafeWaitCommand(storage: self.storage, priority: .highest)
    }
}

extension QueueSafeWaitSchedule: Sendable where Value: Sendable {}
