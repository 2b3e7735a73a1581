extension GCDQueue {
    /// Runs `block` asynchronously on `queue`: the same as `queue.async(block)`.
    ///
    /// - Parameters:
    ///   - queue: Where the block runs.
    ///   - block: The work.
    /// - Returns: `queue`, so that `queue <<< a <<< b` sends both.
    @discardableResult
    public static func <<< (queue: GCDQueue, block: @escaping @Sendable () -> Void) -> GCDQueue {
        queue.async(block)
    }

    /// Runs `block` as a barrier on `queue`: the same as `queue.barrierAsync(block)`.
    ///
    /// - Parameters:
    ///   - queue: Where the block runs.
    ///   - block: The work.
    /// - Returns: `queue`.
    @discardableResult
    public static func |<| (queue: GCDQueue, block: @escaping @Sendable () -> Void) -> GCDQueue {
        queue.barrierAsync(block)
    }

    /// Makes a task that runs `block` on `queue`; it starts when you call ``GCDTask/async()``.
    ///
    /// - Parameters:
    ///   - queue: Where the block runs.
    ///   - block: The work.
    /// - Returns: The new task.
    public static func + (queue: GCDQueue, block: @escaping @Sendable () -> Void) -> GCDTask {
        GCDTask(queue: queue, block)
    }
}
