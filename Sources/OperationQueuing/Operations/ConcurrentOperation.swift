import AtomicPrimitives
import Dispatch
import Foundation

/// An asynchronous `Operation` with Queuer's retry model, manual retry and manual finish, and thread-safe state.
///
/// ```swift
/// let upload = ConcurrentOperation(name: "upload") { operation in
///     operation.success = send()  // false: run again, up to maximumRetries attempts in all
/// }
/// upload.maximumRetries = 3
/// upload.addToQueue(queuer)
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
    private struct State {
        var executionBlock: (@Sendable (ConcurrentOperation) -> Void)?
        var success = true
        var maximumRetries = 3
        var currentAttempt = 1
        var manualRetry = false
        var manualFinish = false
        var isExecuting = false
        var isFinished = false
        var isPaused = false
        /// An attempt is running and has not ended.
        var attemptIsRunning = false
        /// A failed attempt waits for `retry()`.
        var isWaitingForRetry = false
        /// `finishOperation()` has claimed the finish.
        var isFinishing = false
    }

    // Safety: every piece of mutable state is in `state`, an AtomicBox; KVO is sent outside its lock.
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
    open var maximumRetries: Int {
        get { self.state.mutate { $0.maximumRetries } }
        set { self.state.mutate { $0.maximumRetries = newValue } }
    }

    /// The attempt running now or last, counted from 1.
    public var currentAttempt: Int {
        self.state.mutate { $0.currentAttempt }
    }

    /// Whether a failed attempt waits for ``retry()`` instead of retrying at once.
    open var manualRetry: Bool {
        get { self.state.mutate { $0.manualRetry } }
        set { self.state.mutate { $0.manualRetry = newValue } }
    }

    /// Whether an attempt ends only when ``finish(success:)`` is called, rather than when ``execute()`` returns.
    open var manualFinish: Bool {
        get { self.state.mutate { $0.manualFinish } }
        set { self.state.mutate { $0.manualFinish = newValue } }
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
        if self.isCancelled {
            self.finishOperation()
            return
        }
        self.changeExecuting(to: true)
        self.runAttempt()
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
    /// ``execute()`` returns. Calls after the operation finished, or for an attempt that already ended, do nothing.
    /// - Parameter success: Whether the attempt succeeded.
    open func finish(success: Bool = true) {
        let ended = self.state.mutate { state -> Bool in
            guard state.attemptIsRunning, !state.isFinished else { return false }
            state.attemptIsRunning = false
            state.success = success
            return true
        }
        if ended { self.attemptEnded() }
    }

    /// Starts the next attempt of an operation waiting after a failed attempt with ``manualRetry``.
    ///
    /// The attempt runs on a global queue, never on the caller's thread. While an attempt runs, after the last
    /// attempt, or after the operation finished, it does nothing.
    open func retry() {
        let retrying = self.state.mutate { state -> Bool in
            guard state.isWaitingForRetry, !state.isFinished else { return false }
            state.isWaitingForRetry = false
            state.currentAttempt += 1
            return true
        }
        if retrying {
            DispatchQueue.global().async { self.runAttempt() }
        }
    }

    /// Records a pause in ``isPaused``; ``Queuer/pause()`` calls it.
    ///
    /// Override it to pause long-running work, and call `super`.
    open func pause() {
        self.state.mutate { $0.isPaused = true }
    }

    /// Clears ``isPaused``; ``Queuer/resume()`` calls it.
    ///
    /// Override it to resume long-running work, and call `super`.
    open func resume() {
        self.state.mutate { $0.isPaused = false }
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

    // MARK: Running

    private func runAttempt() {
        let manualFinish = self.state.mutate { state -> Bool in
            state.attemptIsRunning = true
            state.success = true
            return state.manualFinish
        }
        self.execute()
        guard !manualFinish else { return }  // the attempt ends when finish(success:) is called
        let ended = self.state.mutate { state -> Bool in
            guard state.attemptIsRunning, !state.isFinished else { return false }  // finish() was called already
            state.attemptIsRunning = false
            return true
        }
        if ended { self.attemptEnded() }
    }

    private func attemptEnded() {
        enum Next { case finish, retryNow, waitForRetry }
        let isCancelled = self.isCancelled  // an open property: read it outside the lock
        let next = self.state.mutate { state -> Next in
            let attempts = max(1, state.maximumRetries)
            guard !state.success, state.currentAttempt < attempts, !isCancelled else { return .finish }
            if state.manualRetry {
                state.isWaitingForRetry = true
                return .waitForRetry
            }
            state.currentAttempt += 1
            return .retryNow
        }
        switch next {
        case .finish: self.finishOperation()
        case .retryNow: self.runAttempt()
        case .waitForRetry: break
        }
    }

    /// Finishes the operation once: claims the finish under the lock, then changes state between KVO notifications.
    private func finishOperation() {
        let claim = self.state.mutate { state -> (claimed: Bool, wasExecuting: Bool) in
            guard !state.isFinishing else { return (false, false) }
            state.isFinishing = true
            state.isWaitingForRetry = false
            return (true, state.isExecuting)
        }
        guard claim.claimed else { return }
        self.willChangeValue(forKey: "isFinished")
        if claim.wasExecuting { self.willChangeValue(forKey: "isExecuting") }
        self.state.mutate { state in
            state.isFinished = true
            state.isExecuting = false
        }
        if claim.wasExecuting { self.didChangeValue(forKey: "isExecuting") }
        self.didChangeValue(forKey: "isFinished")
    }

    private func changeExecuting(to executing: Bool) {
        self.willChangeValue(forKey: "isExecuting")
        self.state.mutate { $0.isExecuting = executing }
        self.didChangeValue(forKey: "isExecuting")
    }
}
