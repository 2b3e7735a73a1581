/// The life of one ``Queuer/run(_:)`` call: whether its body may start, and who resumes the caller.
///
/// Three parties race: the caller's task, which waits and may be cancelled at any moment; the operation's body,
/// which starts when the queue reaches it; and the operation's completion, which comes also when the body never ran
/// (the operation was cancelled by someone else before it started). The caller is resumed exactly once, by the
/// first of: a cancellation before the body started (with `CancellationError`), the body's end (with its outcome),
/// or a completion without a body (with `CancellationError`). A body that has not started when the caller is
/// resumed never starts, so a cancelled call gives up its place at once and its body cannot run later.
///
/// A pure state machine: every event returns what to do, and its owner does it outside its lock.
struct RunStateMachine<Value: Sendable>: Sendable {
    typealias Continuation = CheckedContinuation<Value, any Error>

    private enum State: Sendable {
        /// The caller has not begun to wait.
        case idle
        /// The caller's task was cancelled before it began to wait: the operation is never queued.
        case cancelledBeforeWaiting
        /// The operation is queued, and its body has not started.
        case waiting(Continuation)
        /// The body runs; only its end resumes the caller.
        case running(Continuation)
        /// The caller has been resumed; nothing follows.
        case resumed
    }

    private var state = State.idle

    /// The caller begins to wait with `continuation`.
    ///
    /// - Returns: `nil` if the operation is to be queued; otherwise the continuation, to resume at once with
    ///   `CancellationError` (the task was cancelled before it waited).
    mutating func wait(_ continuation: Continuation) -> Continuation? {
        switch self.state {
        case .idle:
            self.state = .waiting(continuation)
            return nil
        case .cancelledBeforeWaiting:
            self.state = .resumed
            return continuation
        case .waiting, .running, .resumed:
            preconditionFailure("Queuer.run: the caller began to wait twice")
        }
    }

    /// The caller's task was cancelled.
    ///
    /// - Returns: The continuation to resume with `CancellationError` if the body has not started (it never will);
    ///   `nil` if the body runs (its end resumes the caller), or the caller has not begun to wait or was resumed.
    mutating func cancel() -> Continuation? {
        switch self.state {
        case .idle:
            self.state = .cancelledBeforeWaiting
            return nil
        case .waiting(let continuation):
            self.state = .resumed
            return continuation
        case .cancelledBeforeWaiting, .running, .resumed:
            return nil
        }
    }

    /// The operation is about to run the body.
    ///
    /// - Returns: Whether the body may run: `false` once the caller was resumed, by a cancellation.
    mutating func bodyStarts() -> Bool {
        switch self.state {
        case .waiting(let continuation):
            self.state = .running(continuation)
            return true
        case .resumed:
            return false
        case .idle, .cancelledBeforeWaiting, .running:
            preconditionFailure("Queuer.run: the body started before its operation was queued, or twice")
        }
    }

    /// The body has returned or thrown.
    ///
    /// - Returns: The continuation, to resume with the body's outcome.
    mutating func bodyEnded() -> Continuation {
        guard case .running(let continuation) = self.state else {
            preconditionFailure("Queuer.run: the body ended without having started")
        }
        self.state = .resumed
        return continuation
    }

    /// The operation has finished.
    ///
    /// - Returns: The continuation to resume with `CancellationError` if the body never started (the operation was
    ///   cancelled before it began, by ``Queuer/cancelAll()`` or through ``Queuer/operations``); otherwise `nil`.
    mutating func operationFinished() -> Continuation? {
        switch self.state {
        case .waiting(let continuation):
            self.state = .resumed
            return continuation
        case .idle, .cancelledBeforeWaiting, .running, .resumed:
            return nil
        }
    }
}
