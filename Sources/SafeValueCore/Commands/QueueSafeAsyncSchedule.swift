import Dispatch

/// The `async(performIn:)` schedule of a ``QueueSafeValue``: pick a priority.
///
/// It holds the holder weakly.
public struct QueueSafeAsyncSchedule<Value: Sendable>: Sendable {
    weak var holder: QueueSafeValue<Value>?
    let queue: DispatchQueue

    /// Commands that run after every pending highest-priority command.
    public var lowestPriority: QueueSafeAsyncCommand<Value> {
        QueueSafeAsyncCommand(holder: self.holder, priority: .lowest, queue: self.queue)
    }

    /// Commands that run before every pending lowest-priority command.
    public var highestPriority: QueueSafeAsyncCommand<Value> {
        QueueSafeAsyncCommand(holder: self.holder, priority: .highest, queue: self.queue)
    }
}
