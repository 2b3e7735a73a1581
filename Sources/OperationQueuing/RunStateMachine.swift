/// The life of one ``Queuer/run(_:)`` call: whether its body may start, and who resumes the caller.
///
/// Three parties race: the caller's task, which waits and may be cancelled at any moment; the operation's body,
/// which starts when the queue reaches it; and the operation's completion, which comes also when the body never ran
/// (the operation was cancelled by someone else before it started). The caller is resumed exactly once: at once
/// with `CancellationError` when its task is cancelled before the body started; otherwise when the operation has
/// finished, with the body's outcome, or with `CancellationError` if the body never ran. A body that has not
/// started when the caller is resumed never starts, so a cancelled call gives up its place at once and its body
/// cannot run later.
///
/// A pure state machine, and not generic, so that its steps cost no generic dispatch: the body's outcome is kept
/// beside it, by ``RunCall``, which owns the lock and does outside it what each event returns.
struct RunStateMachine: Sendable {
    /// Resumes the caller, which then reads the outcome (or, without one, throws `CancellationError`).
    typealias Continuation = CheckedContinuation<Void, Never>

    private enum State: Sendable {
        /// The caller has not begun to wait.
        case idle
        /// The caller's task was cancelled before it began to wait: the operation is never queued.
        case cancelledBeforeWaiting
        /// The operation is queued, and its body has not started.
        case waiting(Continuation)
        /// The body runs; the caller is resumed once it has ended and the operation has finished.
        case running(Continuation)
        /// The body has ended; the caller is resumed when the operation has finished.
        case bodyEnded(Continuation)
        /// The operation finished while the body still ran; the caller is resumed when the body ends.
        case operationFinishedFirst(Continuation)
        /// The caller has been resumed; nothing follows.
        case resumed
    }

    private var state = State.idle

    /// The caller begins to wait with `continuation`.
    ///
    /// - Returns: `nil` if the operation is to be queued; otherwise the continuation, to resume at once (the task
    ///   was cancelled before it waited).
    mutating func wait(_ continuation: Continuation) -> Continuation? {
        switch self.state {
        case .idle:
            self.state = .waiting(continuation)
            return nil
        case .cancelledBeforeWaiting:
            self.state = .resumed
            return continuation
        case .waiting, .running, .bodyEnded, .operationFinishedFirst, .resumed:
            halt("Queuer.run: the caller began to wait twice")
        }
    }

    /// The caller's task was cancelled.
    ///
    /// - Returns: The continuation to resume if the body has not started (it never will);
    ///   `nil` if the body runs (the caller gets its outcome), or the caller has not begun to wait or was resumed.
    mutating func cancel() -> Continuation? {
        switch self.state {
        case .idle:
            self.state = .cancelledBeforeWaiting
            return nil
        case .waiting(let continuation):
            self.state = .resumed
            return continuation
        case .cancelledBeforeWaiting, .running, .bodyEnded, .operationFinishedFirst, .resumed:
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
        case .idle, .cancelledBeforeWaiting, .running, .bodyEnded, .operationFinishedFirst:
            halt("Queuer.run: the body started before its operation was queued, or twice")
        }
    }

    /// The body has returned or thrown.
    ///
    /// - Returns: The continuation to resume, if the operation has finished already; otherwise `nil` (the
    ///   operation's end resumes the caller).
    mutating func bodyEnded() -> Continuation? {
        switch self.state {
        case .running(let continuation):
            self.state = .bodyEnded(continuation)
            return nil
        case .operationFinishedFirst(let continuation):
            self.state = .resumed
            return continuation
        case .idle, .cancelledBeforeWaiting, .waiting, .bodyEnded, .resumed:
            halt("Queuer.run: the body ended without having started, or twice")
        }
    }

    /// The operation has finished.
    ///
    /// - Returns: The continuation to resume: after the body ended, or if the body never started (the operation
    ///   was cancelled before it began, by ``Queuer/cancelAll()`` or through ``Queuer/operations``); `nil` if the
    ///   caller was resumed already, or the body still runs.
    mutating func operationFinished() -> Continuation? {
        switch self.state {
        case .waiting(let continuation), .bodyEnded(let continuation):
            self.state = .resumed
            return continuation
        case .running(let continuation):
            self.state = .operationFinishedFirst(continuation)
            return nil
        case .idle, .cancelledBeforeWaiting, .operationFinishedFirst, .resumed:
            return nil
        }
    }
}
