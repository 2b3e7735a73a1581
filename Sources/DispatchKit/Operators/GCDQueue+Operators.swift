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

    /// Runs each of `blocks` asynchronously on `queue`, in order of submission: the same as `queue.async(blocks)`.
    ///
    /// - Parameters:
    ///   - queue: Where the blocks run.
    ///   - blocks: The work items.
    /// - Returns: `queue`, so that sends can be chained.
    @discardableResult
    public static func <<< (queue: GCDQueue, blocks: [@Sendable () -> Void]) -> GCDQueue {
        queue.async(blocks)
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
