/// The life of a ``ConcurrentOperation``, attempt by attempt, as a pure value: events in, actions out.
///
/// Every decision about an operation — whether an attempt runs, whether it has ended, what follows it, whether a
/// cancel finishes the operation now — is made here, in one call, so that the owner can make it under one lock.
/// The machine holds no lock, runs no user code, sends no KVO and knows no Foundation; the owner applies the returned
/// ``Action`` after it has let its lock go.
///
/// Attempts have numbers, from 1. Events about an attempt name it, and an event about an attempt that is not the
/// current one does nothing: a late or duplicate `finish` meant for attempt N cannot end attempt N + 1.
package struct OperationStateMachine: Equatable, Sendable {
    /// Where the operation is in its life.
    package enum Phase: Equatable, Sendable {
        /// `start()` has not run.
        case notStarted
        /// Attempt `number` runs: its `execute()` has been called.
        case running(Attempt)
        /// A failed attempt waits for `retry()` (with manual retry).
        case waitingForRetry
        /// `retry()` was called while the operation was paused: the next attempt becomes pending at `resume()`.
        case retryingOnResume
        /// Attempt `number` has been decided on and handed to a queue, possibly after a delay; it has not begun.
        case pending(attempt: Int)
        /// No attempt will run again; the owner is finishing the operation (sending its KVO).
        case ending
        /// The operation has finished.
        case finished
    }

    /// How far a running attempt has come.
    ///
    /// It ends when its `execute()` has returned and, with manual finish, its `finish` has come — whichever is later.
    package struct Attempt: Equatable {
        /// The attempt's number, from 1.
        package let number: Int
        /// Whether the attempt ends only with a `finish`, as manual finish was when it began.
        package let manualFinish: Bool
        /// Whether its `execute()` has returned.
        package var executeReturned = false
        /// Whether a `finish` for it has come.
        package var finishCalled = false
        /// Whether a failure may be retried: `false` once the error filter has refused the error it failed with.
        package var retryAllowed = true
    }

    /// What the owner does, outside its lock, after an event.
    package enum Action: Equatable {
        /// Nothing.
        case none
        /// Call `execute()` for attempt `attempt`, on this thread, now.
        case execute(attempt: Int)
        /// Begin attempt `attempt` (with `begin(_:)`), never on the thread of a caller
        /// that is not the attempt's own: after `policy`'s delay for an automatic retry, at once for a manual one.
        case scheduleAttempt(Int, policy: RetryPolicy?)
        /// Finish the operation: KVO for `isFinished` (and `isExecuting` when `wasExecuting`) around
        /// `markFinished()`.
        case finish(wasExecuting: Bool)
    }

    /// A machine for an operation that has not started, with the default configuration.
    package init() {}

    // MARK: Configuration

    /// The total number of attempts allowed, as set; see ``attemptLimit``.
    package var maximumRetries = 3
    /// Whether a failed attempt waits for `retry()`.
    package var manualRetry = false
    /// Whether an attempt ends only with a `finish`; read when an attempt begins.
    package var manualFinish = false
    /// The delay before an automatic retry; read when an attempt fails.
    package var retryPolicy = RetryPolicy.immediate
    /// Whether the operation is a group's: one attempt, ended by a `finish`, whatever is set.
    package var isGroup = false

    // MARK: State

    package private(set) var phase = Phase.notStarted
    /// Whether the current (or last) attempt succeeded; `false` until an attempt has run.
    package private(set) var success = false
    /// The attempt running now or last, from 1.
    package private(set) var currentAttempt = 1
    /// Whether `cancel()` was called.
    package private(set) var isCancelled = false
    /// Whether `pause()` was called more recently than `resume()`.
    package private(set) var isPaused = false
    /// Whether the operation has started and not finished, as KVO reports it.
    package private(set) var isExecuting = false
    /// Whether the operation has finished, as KVO reports it.
    package private(set) var isFinished = false

    /// The attempts allowed in all: 0 behaves as 1, and a group makes one.
    package var attemptLimit: Int { self.isGroup ? 1 : max(1, self.maximumRetries) }

    /// Whether a failed attempt waits for `retry()` now.
    package var isWaitingForRetry: Bool { self.phase == .waitingForRetry || self.phase == .retryingOnResume }

    // MARK: Events

    /// `start()`: runs attempt 1, or finishes at once if the operation was cancelled.
    ///
    /// - Returns: The action, or `nil` if the operation had started already (a misuse the owner traps on).
    package mutating func start() -> Action? {
        guard self.phase == .notStarted else { return nil }
        guard !self.isCancelled else { return self.end(success: false) }
        self.isExecuting = true
        return self.begin(number: 1)
    }

    /// `cancel()`: no further attempt begins; an operation between attempts finishes now, unsuccessfully.
    ///
    /// One that has not started finishes at `start()`; a running attempt goes on, and the operation finishes when
    /// it ends.
    package mutating func cancel() -> Action {
        self.isCancelled = true
        switch self.phase {
        case .waitingForRetry, .retryingOnResume, .pending:
            return self.end(success: false)
        case .notStarted, .running, .ending, .finished:
            return .none
        }
    }

    /// Attempt `number`, handed to a queue, is about to run.
    package mutating func begin(_ number: Int) -> Action {
        guard self.phase == .pending(attempt: number) else { return .none }  // cancelled meanwhile
        return self.begin(number: number)
    }

    /// The `execute()` of attempt `number` has returned.
    package mutating func executeReturned(_ number: Int) -> Action {
        guard case .running(var attempt) = self.phase, attempt.number == number else { return .none }
        attempt.executeReturned = true
        self.phase = .running(attempt)
        guard attempt.finishCalled || !attempt.manualFinish else { return .none }
        return self.attemptEnded()
    }

    /// A `finish` with `success` for attempt `number`, or for whichever attempt runs when `number` is `nil`.
    ///
    /// Before its `execute()` has returned, it records `success` and the attempt ends when `execute()` returns. A
    /// second `finish` for one attempt, or one for an attempt that is not running, does nothing. With
    /// `retryAllowed` `false` (the error filter refused the failure's error), a failed attempt is not retried.
    package mutating func finish(attempt number: Int?, success: Bool, retryAllowed: Bool = true) -> Action {
        guard self.acceptsFinish(attempt: number), case .running(var attempt) = self.phase else { return .none }
        attempt.finishCalled = true
        attempt.retryAllowed = retryAllowed
        self.phase = .running(attempt)
        self.success = success
        guard attempt.executeReturned else { return .none }
        return self.attemptEnded()
    }

    /// Whether a `finish` for attempt `number` (or for the running attempt, when `nil`) would end an attempt now:
    /// the attempt runs and has had no `finish` yet.
    package func acceptsFinish(attempt number: Int?) -> Bool {
        guard case .running(let attempt) = self.phase else { return false }
        return (number == nil || number == attempt.number) && !attempt.finishCalled
    }

    /// The attempt that a failure reported now by a `finish` for attempt `number` would end, if another would follow.
    ///
    /// `number` `nil` stands for the running attempt. The result is `nil` if that `finish` would do nothing, or the
    /// operation would end anyway (it was cancelled, or that was its last attempt). Only otherwise is the error
    /// filter asked.
    package func attemptRetriedOnFailure(_ number: Int?) -> Int? {
        guard self.acceptsFinish(attempt: number), !self.isCancelled, self.currentAttempt < self.attemptLimit else {
            return nil
        }
        return self.currentAttempt
    }

    /// `retry()`: a failed attempt waiting for it is followed by the next, or by the next at `resume()` if paused.
    package mutating func retry() -> Action {
        guard self.phase == .waitingForRetry else { return .none }
        guard !self.isPaused else {
            self.phase = .retryingOnResume
            return .none
        }
        return self.schedule(policy: nil)
    }

    /// `pause()`: a `retry()` waits for `resume()`.
    package mutating func pause() {
        self.isPaused = true
    }

    /// `resume()`: a `retry()` that came while paused schedules its attempt now.
    package mutating func resume() -> Action {
        self.isPaused = false
        guard self.phase == .retryingOnResume else { return .none }
        return self.schedule(policy: nil)
    }

    /// Sets `success` from the running attempt; at any other time the outcome does not change, so that nothing but an
    /// attempt makes an operation successful.
    package mutating func setSuccess(_ success: Bool) {
        guard case .running = self.phase else { return }
        self.success = success
    }

    /// The owner sends the KVO of a ``Action/finish(wasExecuting:)`` around this.
    package mutating func markFinished() {
        guarantee(self.phase == .ending, "OperationStateMachine: markFinished() in phase \(self.phase)")
        self.phase = .finished
        self.isExecuting = false
        self.isFinished = true
    }

    // MARK: Transitions

    /// Attempt `number` runs now: the one place where an attempt begins.
    private mutating func begin(number: Int) -> Action {
        self.currentAttempt = number
        self.success = true
        self.phase = .running(Attempt(number: number, manualFinish: self.isGroup || self.manualFinish))
        return .execute(attempt: number)
    }

    /// The running attempt has ended: decides what follows it.
    private mutating func attemptEnded() -> Action {
        guard case .running(let attempt) = self.phase, !self.success, attempt.retryAllowed, !self.isCancelled,
            self.currentAttempt < self.attemptLimit
        else { return self.end(success: self.success) }
        guard !self.manualRetry else {
            self.phase = .waitingForRetry
            return .none
        }
        return self.schedule(policy: self.retryPolicy)
    }

    /// The next attempt is decided on; it begins when the owner's queue runs it, unless a cancel comes first.
    private mutating func schedule(policy: RetryPolicy?) -> Action {
        let next = self.currentAttempt + 1
        self.phase = .pending(attempt: next)
        return .scheduleAttempt(next, policy: policy)
    }

    /// No attempt will run again.
    private mutating func end(success: Bool) -> Action {
        self.success = success
        self.phase = .ending
        return .finish(wasExecuting: self.isExecuting)
    }
}
