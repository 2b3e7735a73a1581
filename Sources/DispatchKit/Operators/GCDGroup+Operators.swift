extension GCDGroup {
    /// Runs `block` in `group`: the same as `group.async(block)`.
    ///
    /// - Parameters:
    ///   - group: The group.
    ///   - block: The work, on the group's queue.
    /// - Returns: `group`, so that `group <<< a <<< b` adds both.
    @discardableResult
    public static func <<< (group: GCDGroup, block: @escaping @Sendable () -> Void) -> GCDGroup {
        group.async(block)
    }

    /// Runs `task` in `group`: the same as `group.async(task)`.
    ///
    /// - Parameters:
    ///   - group: The group.
    ///   - task: The task, on its own queue.
    /// - Returns: `group`.
    @discardableResult
    public static func <<< (group: GCDGroup, task: GCDTask) -> GCDGroup {
        group.async(task)
    }

    /// Runs each of `blocks` in `group`: the same as `group.async(blocks)`.
    ///
    /// - Parameters:
    ///   - group: The group.
    ///   - blocks: The work items, on the group's queue.
    /// - Returns: `group`.
    @discardableResult
    public static func <<< (group: GCDGroup, blocks: [@Sendable () -> Void]) -> GCDGroup {
        group.async(blocks)
    }

    /// Runs each of `tasks` in `group`: the same as `group.async(tasks)`.
    ///
    /// - Parameters:
    ///   - group: The group.
    ///   - tasks: The tasks, each on its own queue.
    /// - Returns: `group`.
    @discardableResult
    public static func <<< (group: GCDGroup, tasks: [GCDTask]) -> GCDGroup {
        group.async(tasks)
    }
}
