/// The commands of the `suspend` schedule: `await` them; they suspend the task while they wait, never block a thread.
///
/// A task cancelled while its command waits gets ``QueueSafeValueError/cancelled`` promptly, without waiting for the
/// value; a task already cancelled when it issues the command gets it without running the command. Closures are
/// non-escaping and run in the calling task, on its actor: each command takes the caller's isolation (`#isolation`),
/// so a closure that is not `Sendable` can be passed from the main actor, from any actor, or from nonisolated code,
/// and may touch the caller's state. This is the package's isolation rule, in "Isolation" of the async guide
/// (Docs/AsyncCode.md).
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
    /// When it has to wait, the command that releases the value may read it for this task (flat combining), in its
    /// place in the queue. A cancellation that comes after it was read returns the value, not `cancelled`.
    ///
    /// - Parameter isolation: The caller's actor; leave the default.
    /// - Returns: A copy of the value, or why the command did not run.
    @inlinable
    public func get(isolation: isolated (any Actor)? = #isolation) async -> Result<Value, QueueSafeValueError> {
        await self.performCombinable(isolation: isolation, .get)
    }

    /// Reads the value, or throws why the command did not run: ``get(isolation:)`` without a `Result` to unpack.
    ///
    /// - Parameter isolation: The caller's actor; leave the default.
    /// - Returns: A copy of the value.
    /// - Throws: ``QueueSafeValueError`` if the command did not run, such as ``QueueSafeValueError/cancelled``
    ///   when the task was cancelled before the command got the value.
    @inlinable
    public func read(isolation: isolated (any Actor)? = #isolation) async throws(QueueSafeValueError) -> Value {
        try await self.performCombinable(isolation: isolation, .get).get()
    }

    /// Replaces the value.
    ///
    /// When it has to wait, the command that releases the value may apply it for this task (flat combining), in its
    /// place in the queue, so that the value need not wait for the task to be scheduled; the replaced value is
    /// destroyed in this task once it is back, never on the releaser's thread. A cancellation that comes after it was
    /// applied does not undo it: the command returns its result.
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor; leave the default.
    ///   - newValue: The new value.
    /// - Returns: The updated value, or why the command did not run.
    @discardableResult
    @inlinable
    public func set(
        isolation: isolated (any Actor)? = #isolation,
        newValue: Value
    ) async -> Result<Value, QueueSafeValueError> {
        await self.performCombinable(isolation: isolation, .set(newValue))
    }

    /// Changes the value in place.
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor; leave the default.
    ///   - access: Runs in the calling task, on its actor, with the value `inout`, inside the command's critical
    ///     section.
    /// - Returns: The updated value, or why the command did not run.
    @discardableResult
    @inlinable
    public func set(
        isolation: isolated (any Actor)? = #isolation,
        _ access: (inout Value) -> Void
    ) async -> Result<Value, QueueSafeValueError> {
        await self.perform(isolation: isolation) { value in
            access(&value)
            return value
        }
    }

    /// Computes something from the value while holding it.
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor; leave the default.
    ///   - transform: Runs in the calling task, on its actor, inside the command's critical section.
    /// - Returns: What `transform` returned, or why the command did not run.
    @inlinable
    public func map<Transformed>(
        isolation: isolated (any Actor)? = #isolation,
        _ transform: (Value) -> Transformed
    ) async -> Result<Transformed, QueueSafeValueError> {
        await self.perform(isolation: isolation) { value in transform(value) }
    }

    @inlinable
    func perform<Success>(
        isolation: isolated (any Actor)?,
        _ body: (inout Value) -> Success
    ) async -> Result<Success, QueueSafeValueError> {
        let engine = self.storage.engine
        guard engine.isHolderAlive else { return .failure(.valueContainerDeinited) }
        if Task.isCancelled { return .failure(.cancelled) }
        // A free value is taken here, inline, without a call to an async function; the rest waits out of line.
        if !engine.tryAcquire() {
            switch await engine.acquireSuspending(self.priority) {
            case .acquired: break
            case .cancelled: return .failure(.cancelled)
            case .valueDestroyed: return .failure(.valueContainerDeinited)
            case .applied: halt("QueueSafeSuspendCommand: a command with a closure was applied")
            }
        }
        defer { engine.release()?.grant() }
        return .success(self.storage.runClosure(body))
    }

    /// Runs a command that passes no closure: as ``perform(isolation:_:)`` when the value is free; when it is held,
    /// the command queues with what it must do, and the holder that releases the turn may apply it for this task
    /// (``CombinedCommand``), so that the turn does not wait for the task to be scheduled.
    @inlinable
    func performCombinable(
        isolation: isolated (any Actor)?,
        _ operation: CombinedValueCommand<Value>.Operation
    ) async -> Result<Value, QueueSafeValueError> {
        let engine = self.storage.engine
        guard engine.isHolderAlive else { return .failure(.valueContainerDeinited) }
        if Task.isCancelled { return .failure(.cancelled) }
        if !engine.tryAcquire() {
            let command = CombinedValueCommand(storage: self.storage, operation: operation)
            switch await engine.acquireSuspending(self.priority, combined: command) {
            case .acquired: break
            case .applied: return .success(command.takeResult())
            case .cancelled: return .failure(.cancelled)
            case .valueDestroyed: return .failure(.valueContainerDeinited)
            }
        }
        defer { engine.release()?.grant() }
        return .success(self.storage.runClosure { value in operation.apply(to: &value) })
    }
}
