/// The commands of the `suspend` schedule: `await` them; they suspend the task while they wait, never block a thread.
///
/// A task cancelled while its command waits gets ``QueueSafeValueError/cancelled`` promptly, without waiting for the
/// value; a task already cancelled when it issues the command gets it without running the command. Closures are
/// non-escaping and run in the calling task.
public struct QueueSafeSuspendCommand<Value: Sendable>: Sendable {
    @usableFromInline
    let storage: ValueStorage<Value>
    @usableFromInline
    let priority: CommandPriority

    @usableFromInline
    init(storage: ValueStorage<Value>, priority: CommandPriority) {
        self.storage = storage
        self.priority = priority
    }

    /// Reads the value.
    ///
    /// - Returns: A copy of the value, or why the command did not run.
    @inlinable
    public func get() async -> Result<Value, QueueSafeValueError> {
        await self.perform { $0 }
    }

    /// Replaces the value.
    ///
    /// - Parameter newValue: The new value.
    /// - Returns: The updated value, or why the command did not run.
    @discardableResult
    @inlinable
    public func set(newValue: Value) async -> Result<Value, QueueSafeValueError> {
        await self.perform { value in
            value = newValue
            return value
        }
    }

    /// Changes the value in place.
    ///
    /// - Parameter access: Runs in the calling task with the value `inout`, inside the command's critical section.
    /// - Returns: The updated value, or why the command did not run.
    @discardableResult
    @inlinable
    public func set(_ access: (inout Value) -> Void) async -> Result<Value, QueueSafeValueError> {
        await self.perform { value in
            access(&value)
            return value
        }
    }

    /// Computes something from the value while holding it.
    ///
    /// - Parameter transform: Runs in the calling task, inside the command's critical section.
    /// - Returns: What `transform` returned, or why the command did not run.
    @inlinable
    public func map<Transformed>(
        _ transform: (Value) -> Transformed
    ) async -> Result<Transformed, QueueSafeValueError> {
        await self.perform { value in transform(value) }
    }

    @inlinable
    func perform<Success>(
        _ body: (inout Value) -> Success
    ) async -> Result<Success, QueueSafeValueError> {
        guard let storage = self.storage.ifHolderAlive else { return .failure(.valueContainerDeinited) }
        guard await storage.engine.acquireSuspending(self.priority) else { return .failure(.cancelled) }
        defer { storage.engine.release() }
        return .success(storage.runClosure(body))
    }
}
