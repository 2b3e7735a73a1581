import AtomicPrimitives
import Dispatch
import Foundation

/// An asynchronous `Operation` with Queuer's retry model, manual retry and manual finish, and thread-safe state.
///
/// ```swift
/// import OperationQueuing
///
/// let upload = ConcurrentOperation(name: "upload") { operation in
///     operation.success = send()  // false: run again, up to maximumRetries attempts in all
/// }
/// upload.maximumRetries = 3
/// upload.addToQueue(queuer)
/// upload.waitUntilFinished()  // here `send()` fails once
/// print(upload.success, upload.currentAttempt)  // true 2
/// ```
///
/// - An attempt runs ``execute()``, which runs ``executionBlock`` by default; subclasses override it.
/// - With ``success`` still `false` after an attempt, the operation runs another, until ``maximumRetries``
///   attempts (0 behaves as 1) have run; ``currentAttempt`` counts them from 1.
/// - With ``manualRetry``, a failed attempt waits for ``retry()`` instead; with ``manualFinish``, an attempt ends only
///   when ``finish(success:)`` is called, from any thread, and waiting for it uses no CPU. See <doc:RetryingOperations>.
///
/// An operation cancelled before it starts never runs its block and finishes; one with no block finishes at once.
/// All state is read and written under a lock.
open class ConcurrentOperation: Operation, @unchecked Sendable {
    /// Where the operation is in its life, attempt by attempt.
    private enum Phase {
        /// `start()` has not run.
        case notStarted
        /// Attempt ``State/currentAttempt`` runs, or has been handed to a queue to run.
        case attempt(AttemptProgress)
        /// A failed attempt waits for `retry()`.
        case waitingForRetry
        /// `retry()` was called while the operation was paused: the attempt starts at `resume()`.
        case retryingAfterResume
        /// A failed attempt waits out the ``RetryPolicy`` delay before the next one.
        case delayingRetry
        /// No attempt will run again: the operation is finishing or finished.
        case ended
    }

    /// How far the current attempt has come.
    ///
    /// It ends when its block has returned and, with manual finish, `finish(success:)` has been called — whichever
    /// comes later.
    private struct AttemptProgress {
        /// ``ConcurrentOperation/manualFinish`` as it was when the attempt started.
        let manualFinish: Bool
        var blockReturned = false
        var finishCalled = false
    }

    /// What to do once an attempt has ended.
    private enum Next {
        /// Nothing yet: the attempt goes on, or the operation waits for `retry()`.
        case wait
        /// Start the next attempt.
        case runNextAttempt
        /// Start the next attempt after a delay.
        case runNextAttemptAfter(Duration)
        /// Finish the operation.
        case finish
    }

    private struct State {
        var executionBlock: (@Sendable (ConcurrentOperation) -> Void)?
        var success = true
        var maximumRetries = 3
        var currentAttempt = 1
        var manualRetry = false
        var manualFinish = false
        var retryPolicy = RetryPolicy.immediate
        var isExecuting = false
        var isFinished = false
        var isPaused = false
        var phase = Phase.notStarted
        /// Set by `GroupOperation`: one attempt, ended by `finish(success:)`, whatever is set.
        var isGroup = false
        /// What the operation was added to (a Queuer, a chain, a group), so that adding it twice traps at the call.
        var owner: String?

        /// The attempts allowed in all.
        var attemptLimit: Int { self.isGroup ? 1 : max(1, self.maximumRetries) }

        /// Starts attempt ``currentAttempt``: `success` is `true` until the attempt says otherwise.
        mutating func beginAttempt() {
            self.success = true
            self.phase = .attempt(AttemptProgress(manualFinish: self.isGroup || self.manualFinish))
        }

        /// Decides what follows the attempt that just ended.
        mutating func attemptEnded(isCancelled: Bool) -> Next {
            guard !self.success, self.currentAttempt < self.attemptLimit, !isCancelled else {
                self.phase = .ended
                return .finish
            }
            if self.manualRetry {
                self.phase = .waitingForRetry
                return .wait
            }
            let delay = self.retryPolicy.delay(beforeRetry: self.currentAttempt)
            guard delay <= .zero else {
                self.phase = .delayingRetry
                return .runNextAttemptAfter(delay)
            }
            self.currentAttempt += 1
            self.beginAttempt()
            return .runNextAttempt
        }
    }

    // Safety: every piece of mutable state is in `state`, an AtomicBox; KVO and user code run outside its lock.
    private let state = AtomicBox(State())

    /// Creates an operation.
    ///
    /// - Parameters:
    ///   - name: The operation's name, for logs and debugging.
    ///   - executionBlock: The work of one attempt; it gets the operation, to set ``success`` or call
    ///     ``finish(success:)``. With no block (and no ``execute()`` override) the operation finishes at once.
    public init(name: String? = nil, executionBlock: (@Sendable (ConcurrentOperation) -> Void)? = nil) {
        super.init()
        self.name = name
        self.state.mutate { $0.executionBlock = executionBlock }
    }

    // MARK: Configuration

    /// The work of one attempt, run by the default ``execute()``.
    public var executionBlock: (@Sendable (ConcurrentOperation) -> Void)? {
        get { self.state.mutate { $0.executionBlock } }
        set { self.state.mutate { $0.executionBlock = newValue } }
    }

    /// Whether the current attempt succeeded; `true` unless the attempt sets it to `false`.
    open var success: Bool {
        get { self.state.mutate { $0.success } }
        set { self.state.mutate { $0.success = newValue } }
    }

    /// The total number of attempts allowed, 3 by default; 0 behaves as 1.
    ///
    /// A ``GroupOperation`` always makes exactly one attempt: for a group this is 1 and setting it does nothing.
    open var maximumRetries: Int {
        get { self.state.mutate { $0.isGroup ? 1 : $0.maximumRetries } }
        set { self.state.mutate { if !$0.isGroup { $0.maximumRetries = newValue } } }
    }

    /// The attempt running now or last, counted from 1.
    public var currentAttempt: Int {
        self.state.mutate { $0.currentAttempt }
    }

    /// Whether a failed attempt waits for ``retry()`` instead of retrying at once.
    ///
    /// Always `false` for a ``GroupOperation``, which makes one attempt.
    open var manualRetry: Bool {
        get { self.state.mutate { !$0.isGroup && $0.manualRetry } }
        set { self.state.mutate { $0.manualRetry = newValue } }
    }

    /// Whether an attempt ends only when ``finish(success:)`` is called, rather than when ``execute()`` returns.
    ///
    /// Read when an attempt starts. Always `true` for a ``GroupOperation``, which finishes when its operations have.
    open var manualFinish: Bool {
        get { self.state.mutate { $0.isGroup || $0.manualFinish } }
        set { self.state.mutate { $0.manualFinish = newValue } }
    }

    /// How long the operation waits before an automatic retry; ``RetryPolicy/immediate`` by default.
    ///
    /// Read when an attempt fails. It does not apply to ``manualRetry``, nor to a ``GroupOperation``, which makes one
    /// attempt.
    public var retryPolicy: RetryPolicy {
        get { self.state.mutate { $0.retryPolicy } }
        set { self.state.mutate { $0.retryPolicy = newValue } }
    }

    /// Whether a failed attempt waits for ``retry()`` now (with ``manualRetry``).
    public var isWaitingForRetry: Bool {
        self.state.mutate { state in
            switch state.phase {
            case .waitingForRetry, .retryingAfterResume: true
            case .notStarted, .attempt, .delayingRetry, .ended: false
            }
        }
    }

    /// Whether ``pause()`` was called more recently than ``resume()``.
    public var isPaused: Bool {
        self.state.mutate { $0.isPaused }
    }

    // MARK: Operation

    /// Always `true`: the operation runs its attempts on its own schedule.
    override open var isAsynchronous: Bool { true }

    /// Whether the operation has started and not finished.
    override open var isExecuting: Bool { self.state.mutate { $0.isExecuting } }

    /// Whether the operation has finished: all its attempts ran, or it was cancelled before it started.
    override open var isFinished: Bool { self.state.mutate { $0.isFinished } }

    /// Starts the first attempt, or finishes at once if the operation was cancelled before it started.
    override open func start() {
        let starts = self.state.mutate { state -> Bool in
            guard case .notStarted = state.phase else { return false }
            state.beginAttempt()
            return true
        }
        precondition(starts, "ConcurrentOperation '\(self.name ?? "unnamed")': start() was called twice")
        if self.isCancelled {
            self.state.mutate { $0.phase = .ended }
            self.finishOperation()
            return
        }
        self.changeExecuting(to: true)
        self.runAttempts()
    }

    /// Cancels the operation.
    ///
    /// One that has not started finishes without running its block when its queue starts it; a running attempt may
    /// go on, but no further attempt starts; one waiting for ``retry()`` or for its ``retryPolicy`` delay finishes at
    /// once, unsuccessfully, and ``retry()`` then does nothing.
    override open func cancel() {
        super.cancel()
        let finishesNow = self.state.mutate { state -> Bool in
            switch state.phase {
            case .waitingForRetry, .retryingAfterResume, .delayingRetry:
                state.phase = .ended
                state.success = false
                return true
            case .notStarted, .attempt, .ended:
                return false
            }
        }
        if finishesNow { self.finishOperation() }
    }

    // MARK: Attempts

    /// Runs one attempt: by default ``executionBlock``, or finishes at once when there is none.
    ///
    /// Override it to give a subclass its work; set ``success`` or call ``finish(success:)`` from it.
    open func execute() {
        if let block = self.executionBlock {
            block(self)
        } else {
            self.finish()
        }
    }

    /// Ends the current attempt with `success`: the operation then retries or finishes.
    ///
    /// Call it from any thread. With ``manualFinish`` it is how an attempt ends; otherwise an attempt also ends when
    /// ``execute()`` returns. An attempt never ends before its ``execute()`` has returned: called while it runs,
    /// `finish` records `success` and the attempt ends when ``execute()`` returns. The next attempt never runs on
    /// the caller's thread. Calls after the operation finished, for an attempt that already ended, or a second time
    /// for the same attempt do nothing.
    /// - Parameter success: Whether the attempt succeeded.
    open func finish(success: Bool = true) {
        let isCancelled = self.isCancelled  // an open property: read it outside the lock
        let next = self.state.mutate { state -> Next in
            guard case .attempt(var progress) = state.phase, !progress.finishCalled else { return .wait }
            progress.finishCalled = true
            state.phase = .attempt(progress)
            state.success = success
            guard progress.blockReturned else { return .wait }  // the attempt ends when execute() returns
            return state.attemptEnded(isCancelled: isCancelled)
        }
        self.proceed(next)
    }

    /// Starts the next attempt of an operation waiting after a failed attempt with ``manualRetry``.
    ///
    /// The attempt runs on a global queue, never on the caller's thread. While the operation is paused (its
    /// ``Queuer`` was paused), the attempt starts at ``resume()``. While an attempt runs, after the last attempt,
    /// after the operation was cancelled, or after it finished, it does nothing.
    open func retry() {
        let retrying = self.state.mutate { state -> Bool in
            guard case .waitingForRetry = state.phase else { return false }
            guard !state.isPaused else {
                state.phase = .retryingAfterResume
                return false
            }
            state.currentAttempt += 1
            state.beginAttempt()
            return true
        }
        if retrying { self.proceed(.runNextAttempt) }
    }

    /// Records a pause in ``isPaused``; ``Queuer/pause()`` calls it.
    ///
    /// While paused, ``retry()`` defers its attempt to ``resume()``. Override it to pause long-running work, and
    /// call `super`.
    open func pause() {
        self.state.mutate { $0.isPaused = true }
    }

    /// Clears ``isPaused``, and starts an attempt that ``retry()`` deferred; ``Queuer/resume()`` calls it.
    ///
    /// Override it to resume long-running work, and call `super`.
    open func resume() {
        let retrying = self.state.mutate { state -> Bool in
            state.isPaused = false
            guard case .retryingAfterResume = state.phase else { return false }
            state.currentAttempt += 1
            state.beginAttempt()
            return true
        }
        if retrying { self.proceed(.runNextAttempt) }
    }

    // MARK: Queues

    /// Adds the operation to ``Queuer/shared``.
    public func addToSharedQueuer() {
        Queuer.shared.addOperation(self)
    }

    /// Adds the operation to `queue`.
    ///
    /// - Parameter queue: The queue to run on.
    public func addToQueue(_ queue: Queuer) {
        queue.addOperation(self)
    }

    /// Records that the operation was handed to `owner`; traps if it was handed to something already.
    ///
    /// An operation runs once, in one place: adding it twice would hang a chain, or crash Foundation on a worker
    /// thread far from the mistake.
    func claim(by owner: String) {
        let previous = self.state.mutate { state -> String? in
            guard let previous = state.owner else {
                state.owner = owner
                return nil
            }
            return previous
        }
        if let previous {
            preconditionFailure(
                "\(owner): ConcurrentOperation '\(self.name ?? "unnamed")' was already added to \(previous); "
                    + "an operation runs once, in one place"
            )
        }
    }

    /// Makes this operation a group's: one attempt, ended by `finish(success:)`, whatever is set.
    func makeGroup() {
        self.state.mutate { $0.isGroup = true }
    }

    // MARK: Running

    /// Runs attempts on the calling thread, one after another, for as long as each is followed by the next at once.
    ///
    /// A loop rather than recursion, so that any number of retries runs in constant stack.
    private func runAttempts() {
        repeat {
            self.execute()
            let isCancelled = self.isCancelled
            let next = self.state.mutate { state -> Next in
                guard case .attempt(var progress) = state.phase else { return .wait }
                progress.blockReturned = true
                state.phase = .attempt(progress)
                guard progress.finishCalled || !progress.manualFinish else { return .wait }
                return state.attemptEnded(isCancelled: isCancelled)
            }
            guard case .runNextAttempt = next else { return self.proceed(next) }
        } while !self.endIfCancelledBeforeRetry()
    }

    /// Acts on what follows an attempt, outside the attempt loop: the next attempt is handed to a global queue,
    /// never run on the caller's thread.
    private func proceed(_ next: Next) {
        switch next {
        case .wait:
            break
        case .finish:
            self.finishOperation()
        case .runNextAttempt:
            DispatchQueue.global(qos: self.qualityOfService.dispatchQoS).async {
                if !self.endIfCancelledBeforeRetry() { self.runAttempts() }
            }
        case .runNextAttemptAfter(let delay):
            let (seconds, attoseconds) = delay.components
            let deadline: DispatchTime =
                seconds < 1_000_000_000
                ? .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
                : .distantFuture
            DispatchQueue.global(qos: self.qualityOfService.dispatchQoS).asyncAfter(deadline: deadline) {
                // A cancel during the delay has already finished the operation.
                let starts = self.state.mutate { state -> Bool in
                    guard case .delayingRetry = state.phase else { return false }
                    state.currentAttempt += 1
                    state.beginAttempt()
                    return true
                }
                if starts, !self.endIfCancelledBeforeRetry() { self.runAttempts() }
            }
        }
    }

    /// Finishes the operation, unsuccessfully, if it was cancelled after its next attempt was decided on but before
    /// that attempt started.
    ///
    /// - Returns: Whether the operation ended: the attempt must not run.
    private func endIfCancelledBeforeRetry() -> Bool {
        guard self.isCancelled else { return false }
        let ends = self.state.mutate { state -> Bool in
            guard case .attempt = state.phase else { return false }
            state.phase = .ended
            state.success = false
            return true
        }
        if ends { self.finishOperation() }
        return true
    }

    /// Finishes the operation once, changing state between KVO notifications.
    private func finishOperation() {
        let wasExecuting = self.state.mutate { $0.isExecuting }
        self.willChangeValue(forKey: "isFinished")
        if wasExecuting { self.willChangeValue(forKey: "isExecuting") }
        self.state.mutate { state in
            state.isFinished = true
            state.isExecuting = false
        }
        if wasExecuting { self.didChangeValue(forKey: "isExecuting") }
        self.didChangeValue(forKey: "isFinished")
    }

    private func changeExecuting(to executing: Bool) {
        self.willChangeValue(forKey: "isExecuting")
        self.state.mutate { $0.isExecuting = executing }
        self.didChangeValue(forKey: "isExecuting")
    }
}

extension QualityOfService {
    /// The dispatch quality-of-service class that matches this one.
    fileprivate var dispatchQoS: DispatchQoS.QoSClass {
        switch self {
        case .userInteractive: .userInteractive
        case .userInitiated: .userInitiated
        case .utility: .utility
        case .background: .background
        case .default: .default
        @unknown default: .default
        }
    }
}
