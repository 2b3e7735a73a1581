/// The commands of the `suspend` schedule: `await` them; they suspend the task while they wait, never block a thread.
///
/// A task cancelled while its command waits gets ``QueueSafeValueError/cancelled`` promptly, without waiting for the
/// value; a task already cancelled when it issues the command gets it without running the command. Closures are
/// non-escaping and run in the calling task.
public struct QueueSafeSuspendCommand<Value: Sendable>: Sendable {
    weak var holder: QueueSafeValue<Value>?
    let priority: CommandPriority

    /// Reads the value.
    ///
    /// - Returns: A copy of the value, or why the command did not run.
    public func get() async -> Result<Value, QueueSafeValueError> {
        await self.perform { $0 }
    }

    /// Replaces the value.
    ///
    /// - Parameter newValue: The new value.
    /// - Returns: The updated value, or why the command did not run.
    @discardableResult
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
    public func map<Transformed>(
        _ transform: (Value) -> Transformed
    ) async -> Result<Transformed, QueueSafeValueError> {
        await self.perform { value in transform(value) }
    }

    private func perform<Success>(
        _ body: (inout Value) -> Success
    ) async -> Result<Success, QueueSafeValueError> {
        guard let storage = self.holder?.storage else { return .failure(.valueContainerDeinited) }
        guard await storage.acquireSuspending(self.priority) else { return .failure(.cancelled) }
        defer { storage.release() }
        return .success(storage.runClosure(body))
    }
}
