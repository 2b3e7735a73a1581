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

    @usableFromInline
    let storage: ValueStorage<Value>
    @usableFromInline
    let priority: CommandPriority
    @usableFromInline
    let queue: DispatchQueue

    @usableFromInline
    init(storage: ValueStorage<Value>, priority: CommandPriority, queue: DispatchQueue) {
        self.storage = storage
        self.priority = priority
        self.queue = queue
    }

    /// Reads the value and hands it to `completion` on the queue.
    ///
    /// - Parameter completion: Runs on the queue after the value is released. `nil` does nothing.
    @inlinable
    public func get(completion: AsyncCompletion?) {
        guard let completion else { return }
        self.submit(completion: completion) { _ in }
    }

    /// Runs `manualCompletion` on the queue with the value, and holds the value until it calls `done`.
    ///
    /// A `done` still not called long after the closure returned is reported by ``ManualCompletionDoctor``.
    /// - Parameters:
    ///   - manualCompletion: Runs on the queue; the command ends when `done` has been called and the closure has
    ///     returned, whichever is later. `done` may be called from any thread. `nil` does nothing.
    ///   - file: The caller's file, for ``ManualCompletionDoctor``'s warning.
    ///   - line: The caller's line, for that warning.
    @inlinable
    public func get(
        manualCompletion: (@Sendable (Result<Value, QueueSafeValueError>, @escaping CommandCompletionClosure) -> Void)?,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        guard let manualCompletion else { return }
        self.submitManually(completion: nil, file: file, line: line) { value, done in
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
    @inlinable
    public func set(newValue: Value, completion: AsyncCompletion? = nil) {
        self.submit(completion: completion) { value in value = newValue }
    }

    /// Changes the value in place, on the queue.
    ///
    /// - Parameters:
    ///   - accessClosure: Runs on the queue with the value `inout`. `nil` fails with
    ///     ``QueueSafeValueError/commandClosureDeallocated``.
    ///   - completion: Runs on the queue after the value is released, with the updated value.
    @inlinable
    public func set(accessClosure: (@Sendable (inout Value) -> Void)?, completion: AsyncCompletion? = nil) {
        guard let accessClosure else {
            return self.fail(.commandClosureDeallocated, completion)
        }
        self.submit(completion: completion, access: accessClosure)
    }

    /// Changes the value in place, on the queue, and holds it until the closure calls `done`.
    ///
    /// A `done` still not called long after the closure returned is reported by ``ManualCompletionDoctor``.
    /// - Parameters:
    ///   - manualCompletion: Runs on the queue with the value `inout` and `done`; the command ends when `done` has
    ///     been called and the closure has returned, whichever is later. `nil` fails with
    ///     ``QueueSafeValueError/commandClosureDeallocated``.
    ///   - completion: Runs on the queue after `done`, with the updated value.
    ///   - file: The caller's file, for ``ManualCompletionDoctor``'s warning.
    ///   - line: The caller's line, for that warning.
    @inlinable
    public func set(
        manualCompletion: (@Sendable (inout Value, @escaping CommandCompletionClosure) -> Void)?,
        completion: AsyncCompletion? = nil,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        guard let manualCompletion else {
            return self.fail(.commandClosureDeallocated, completion)
        }
        self.submitManually(completion: completion, file: file, line: line, body: manualCompletion) { error in
            completion?(.failure(error))
        }
    }

    // MARK: Running

    /// Delivers `error` on the queue at once; the holder's absence wins over any other error.
    @inlinable
    func fail(_ error: QueueSafeValueError, _ completion: AsyncCompletion?) {
        guard let completion else { return }
        let engine = self.storage.engine
        let reported: QueueSafeValueError = !engine.isHolderAlive ? .valueContainerDeinited : error
        self.queue.async { engine.runCompletion { completion(.failure(reported)) } }
    }

    @inlinable
    func submit(completion: AsyncCompletion?, access: @escaping @Sendable (inout Value) -> Void) {
        guard let storage = self.storage.ifHolderAlive else {
            return self.fail(.valueContainerDeinited, completion)
        }
        let submitted = storage.engine.submit(self.priority, on: self.queue) {
            storage.engine.tookTurnOver()
            let result = storage.runClosure { value -> Value in
                access(&value)
                return value
            }
            let next = storage.engine.release()
            guard let completion else { return next }  // nothing of the user's runs before the next job: chain it
            // Wake the next holder before the completion runs, so that the value is not held by a completion.
            next?.grant()
            storage.engine.runCompletion { completion(.success(result)) }
            return nil
        }
        if !submitted { self.fail(.valueContainerDeinited, completion) }
    }

    @inlinable
    func submitManually(
        completion: AsyncCompletion?,
        file: StaticString,
        line: UInt,
        body: @escaping @Sendable (inout Value, @escaping CommandCompletionClosure) -> Void,
        failure: @escaping @Sendable (QueueSafeValueError) -> Void
    ) {
        guard let storage = self.storage.ifHolderAlive else {
            let queue = self.queue
            return queue.async { failure(.valueContainerDeinited) }
        }
        let queue = self.queue
        let submitted = storage.engine.submit(self.priority, on: queue) {
            storage.engine.tookTurnOver()
            let latch = CompletionLatch {
                guard let completion else {
                    storage.engine.release()?.grant()
                    return
                }
                let result = storage.current
                // The completion goes onto the queue before the value is released: a command issued after the
                // release, from any thread, then queues its own job behind it, so completions keep command order.
                // And it starts only once the release is done, so that it runs after the release: a command it
                // issues queues behind those that waited for the value. The wait is bounded: between the send and
                // the release below none of the user's code runs.
                let released = ParkedThread()
                queue.async {
                    released.waitForGrant()
                    storage.engine.runCompletion { completion(.success(result)) }
                }
                let next = storage.engine.release()
                released.grant()  // before the next holder is woken or the value destroyed, which may run user code
                next?.grant()
            }
            storage.runClosure { value in body(&value, latch.done) }
            // Noted before the closure's arrival, which may end the command and let the next one note its own.
            if !latch.isDone { storage.watchCompletion(latch, schedule: "async(performIn:)", file: file, line: line) }
            latch.closureReturned()
            return nil  // the latch hands the turn over
        }
        if !submitted { queue.async { failure(.valueContainerDeinited) } }
    }
}
