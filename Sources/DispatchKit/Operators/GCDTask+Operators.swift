extension GCDTask {
    /// Chains `block` to run after `task`, on its queue: the same as `task.chain(block)`.
    ///
    /// - Parameters:
    ///   - task: The task that runs first.
    ///   - block: The work that follows.
    /// - Returns: The new task, so that `task <> a <> b` runs task, a, b in order.
    @discardableResult
    public static func <> (task: GCDTask, block: @escaping @Sendable () -> Void) -> GCDTask {
        task.chain(block)
    }

    /// Chains `next` to start after `task` has finished: the same as `task.chain(next)`.
    ///
    /// - Parameters:
    ///   - task: The task that runs first.
    ///   - next: The task that follows, on its own queue.
    /// - Returns: `next`.
    @discardableResult
    public static func <> (task: GCDTask, next: GCDTask) -> GCDTask {
        task.chain(next)
    }
}
