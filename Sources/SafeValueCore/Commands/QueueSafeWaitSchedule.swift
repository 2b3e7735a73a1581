/// The `wait` schedule of a ``QueueSafeValue``: pick a priority.
///
/// It holds the holder weakly.
public struct QueueSafeWaitSchedule<Value> {
    weak var holder: QueueSafeValue<Value>?

    /// Commands that run after every pending highest-priority command.
    public var lowestPriority: QueueSafeWaitCommand<Value> {
        QueueSafeWaitCommand(holder: self.holder, priority: .lowest)
    }

    /// Commands that run before every pending lowest-priority command.
    public var highestPriority: QueueSafeWaitCommand<Value> {
        QueueSafeWaitCommand(holder: self.holder, priority: .highest)
    }
}

extension QueueSafeWaitSchedule: Sendable where Value: Sendable {}
