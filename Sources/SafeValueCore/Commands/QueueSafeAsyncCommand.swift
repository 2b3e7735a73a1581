import Dispatch

/// The commands of the `async(performIn:)` schedule: each returns at once and runs its closures on the queue.
///
/// An access closure runs on the queue while the command holds the value; the `completion` runs on the queue after
/// the value is released (after `done`, for manual completion). On a serial queue, completions come in command
/// order. A command that fails when issued delivers its failure to the queue at once, so it may overtake earlier
/// completions. The caller never blocks, not even for manual completion, and not when the queue is its own.
public struct QueueSafeAsyncCommand<Value: Sendable>: Sendable {
    /// The result callback of an `async` command.
    public typealias AsyncCompletion = @Sendable (Result<Value, QueueSafeValueError>) -> Void

    weak var holder: QueueSafeValue<Value>?
    let priority: CommandPriority
    let queue: DispatchQueue

    /// Reads the value and hands it to `completion` on the queue.
    ///
    /// - Parameter completion: Runs on the queue after the value is released. `nil` does nothing.
    public func get(completion: AsyncCompletion?) {
        guard let completion else { return }
        self.submit(completion: completion) { _ in }
    }

    /// Runs `manualCompletion` on the queue with the value, and holds the value until it calls `done`.
    ///
    /// - Parameter manualCompletion: Runs on the queue; the command ends when `done` has been called and the
    ///   closure has returned, whichever is later. `done` may be called from any thread. `nil` does nothing.
    public func get(
        manualCompletion: (@Sendable (Result<Value, QueueSafeValueError>, @escaping CommandCompletionClosure) -> Void)?
    ) {
        guard let manualCompletion else { return }
        self.submitManually(completion: nil) { value, done in
            manualCompletion(.success(value), done)
        } failure: { error in
            manualCompletion(.failure(error), {})
        }
    }

    /// Replaces the value.
    ///
    /// - Parameters:
    ///   - newValue: The new value.
    ///   - completion: Runs on the queue after the value is released, with the updated value.
    public func set(newValue: Value, completion: AsyncCompletion? = nil) {
        self.submit(completion: completion) { value in value = newValue }
    }

    /// Changes the value in place, on the queue.
    ///
    /// - Parameters:
    ///   - accessClosure: Runs on the queue with the value `inout`. `nil` fails with
    ///     ``QueueSafeValueError/commandClosureDeallocated``.
    ///   - completion: Runs on the queue after the value is released, with the updated value.
    public func set(accessClosure: (@Sendable (inout Value) -> Void)?, completion: AsyncCompletion? = nil) {
        guard let accessClosure else {
            return self.fail(.commandClosureDeallocated, completion)
        }
        self.submit(completion: completion, access: accessClosure)
    }

    /// Changes the value in place, on the queue, and holds it until the closure calls `done`.
    ///
    /// - Parameters:
    ///   - manualCompletion: Runs on the queue with the value `inout` and `done`; the command ends when `done` has
    ///     been called and the closure has returned, whichever is later. `nil` fails with
    ///     ``QueueSafeValueError/commandClosureDeallocated``.
    ///   - completion: Runs on the queue after `done`, with the updated value.
    public func set(
        manualCompletion: (@Sendable (inout Value, @escaping CommandCompletionClosure) -> Void)?,
        completion: AsyncCompletion? = nil
    ) {
        guard let manualCompletion else {
            return self.fail(.commandClosureDeallocated, completion)
        }
        self.submitManually(completion: completion, body: manualCompletion) { error in completion?(.failure(error)) }
    }

    // MARK: Running

    /// Delivers `error` on the queue at once; the holder's absence wins over any other error.
    private func fail(_ error: QueueSafeValueError, _ completion: AsyncCompletion?) {
        guard let completion else { return }
        let reported: QueueSafeValueError = self.holder == nil ? .valueContainerDeinited : error
        self.queue.async { completion(.failure(reported)) }
    }

    private func submit(completion: AsyncCompletion?, access: @escaping @Sendable (inout Value) -> Void) {
        guard let storage = self.holder?.storage else {
            return self.fail(.valueContainerDeinited, completion)
        }
        storage.submit(self.priority, on: self.queue) {
            let result = storage.runClosure { value -> Value in
                access(&value)
                return value
            }
            storage.release()
            completion?(.success(result))
        }
    }

    private func submitManually(
        completion: AsyncCompletion?,
        body: @escaping @Sendable (inout Value, @escaping CommandCompletionClosure) -> Void,
        failure: @escaping @Sendable (QueueSafeValueError) -> Void
    ) {
        guard let storage = self.holder?.storage else {
            let queue = self.queue
            return queue.async { failure(.valueContainerDeinited) }
        }
        let queue = self.queue
        storage.submit(self.priority, on: queue) {
            let latch = CompletionLatch {
                let result = storage.value
                storage.release {
                    if let completion { queue.async { completion(.success(result)) } }
                }
            }
            storage.runClosure { value in body(&value, latch.done) }
            latch.closureReturned()
        }
    }
}
