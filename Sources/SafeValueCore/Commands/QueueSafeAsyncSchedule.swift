import Dispatch

/// The `async(performIn:)` schedule of a ``QueueSafeValue``: pick a priority.
///
/// It does not keep the holder alive: commands issued after the holder's release fail.
public struct QueueSafeAsyncSchedule<Value: Sendable>: Sendable {
    @usableFromInline
    let storage: ValueStorage<Value>
    @usableFromInline
    let queue: DispatchQueue

    @usableFromInline
    init(storage: ValueStorage<Value>, queue: DispatchQueue) {
        self.storage = storage
        self.queue = queue
    }

    /// Commands that run after every pending highest-priority command.
    @inlinable
    public var lowestPriority: QueueSafeAsyncCommand<Value> {
        QueueSafeAsyncCommand(storage: self.storage, priority: .lowest, queue: self.queue)
    }

    /// Commands that run before every pending lowest-priority command.
    @inlinable
    public var highestPriority: QueueSafeAsyncCommand<Value> {
        QueueSafeAsyncCommand(storage: self.storage, priority: .highest, queue: self.queue)
    }
}
