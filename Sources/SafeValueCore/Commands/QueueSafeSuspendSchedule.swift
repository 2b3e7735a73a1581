/// The `suspend` schedule of a ``QueueSafeValue``: pick a priority.
///
/// It holds the holder weakly.
public struct QueueSafeSuspendSchedule<Value: Sendable>: Sendable {
    weak var holder: QueueSafeValue<Value>?

    /// Commands that run after every pending highest-priority command.
    public var lowestPriority: QueueSafeSuspendCommand<Value> {
        QueueSafeSuspendCommand(holder: self.holder, priority: .lowest)
    }

    /// Commands that run before every pending lowest-priority command.
    public var highestPriority: QueueSafeSuspendCommand<Value> {
        QueueSafeSuspendCommand(holder: self.holder, priority: .highest)
    }
}
