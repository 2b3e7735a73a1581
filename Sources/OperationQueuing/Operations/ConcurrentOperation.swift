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
/// - With ``success`` still `false` after an attempt, the operation runs another, until ``maximumAttempts`` attempts
///   (Queuer's ``maximumRetries``, the same number) have run; ``currentAttempt`` counts them from 1. A
///   ``retryPolicy`` spaces them out on ``retryClock``, and ``shouldRetry`` can refuse an error that another attempt
///   cannot cure (see ``finish(throwing:)``).
/// - With ``manualRetry``, a failed attempt waits for ``retry()`` instead; with ``manualFinish``, an attempt ends only
///   when ``finish(success:)`` is called, from any thread, and waiting for it uses no CPU. See <doc:RetryingOperations>.
///
/// An operation cancelled before it starts never runs its block and finishes; one with no block finishes at once.
/// All state is read and written under a lock.
open class ConcurrentOperation: Operation, @unchecked Sendable {
    private struct State {
        var executionBlock: (@Sendable (ConcurrentOperation) -> Void)?
        var machine = OperationStateMachine()
        /// What the operation was added to (a Queuer, a chain, a group), so that adding it twice traps at the call.
        var owner: Claimant?
        /// The error the last attempt ended with, if it ended with one.
        var error: (any Error)?
        /// Asked whether an attempt that failed with an error may be retried; `nil`: every one may.
        var shouldRetry: (@Sendable (any Error, Int) -> Bool)?
        /// The clock on which the retry delays pass.
        var retryClock: any Clock<Duration> = ContinuousClock()
        /// The seed of the retry delays' jitter; `nil`: the system's random numbers.
        var retryJitterSeed: UInt64?
        /// The wait before the pending attempt, so that a cancel can end it at once.
        var delay: RetryTimer?
    }

    // Safety: every piece of mutable state is in `state`, an AtomicBox, but `executingAttempt`: that one is written
    // only by the thread that is about to call `execute()`, after the state lock has said the attempt begins, and read
    // by that `execute()` (and by the task an AsyncOperation's `execute()` starts, before its attempt can end).
    // Attempts never overlap, and each begins after the one before has ended under the lock, so no write meets a
    // read. KVO and user code run outside the lock.
    private let state = AtomicBox(State())
    @exclusivity(unchecked)
    private var executingAttempt = 0

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

    /// Whether the current attempt succeeded: `false` until an attempt has run, then `true` unless the attempt sets
    /// it to `false`.
    ///
    /// An operation cancelled before it started, or while it waited for its next attempt, is not successful. Set it
    /// from the attempt: at any other time (before the first attempt, between attempts, after the operation
    /// finished) setting it does nothing.
    open var success: Bool {
        get { self.state.mutate { $0.machine.success } }
        set { self.state.mutate { $0.machine.setSuccess(newValue) } }
    }

    /// The total number of attempts allowed, 3 by default; 0 behaves as 1: Queuer's name for
    /// ``maximumAttempts``.
    ///
    /// Despite its name it counts attempts, not retries: `maximumRetries = 3` means one attempt and at most two
    /// retries. It is the seed's spelling, kept as it was; ``maximumAttempts`` is the same number under a name that
    /// says so, and setting either sets both.
    ///
    /// A ``GroupOperation`` always makes exactly one attempt: for a group this is 1, and setting it to more traps.
    /// - Precondition: The new value is 0 or more; a negative count traps with a message naming the operation and
    ///   the value.
    open var maximumRetries: Int {
        get { self.state.mutate { $0.machine.isGroup ? 1 : $0.machine.maximumRetries } }
        set {
            guarantee(
                newValue >= 0,
                "ConcurrentOperation '\(self.name ?? "unnamed")': maximumRetries is the number of attempts in all and "
                    + "must be 0 or more (0 behaves as 1), not \(newValue)"
            )
            self.state.mutate { $0.machine.maximumRetries = newValue }
        }
    }

    /// The total number of attempts allowed, the first included: 3 by default.
    ///
    /// The same number as ``maximumRetries``, Queuer's name for it; setting either sets both. A `maximumRetries` of 0
    /// reads here as 1, the number of attempts it allows. A ``GroupOperation`` always makes exactly one attempt: for
    /// a group this is 1, and setting it to more traps.
    /// - Precondition: The new value is 1 or more; 0 or a negative count traps with a message naming the operation
    ///   and the value.
    open var maximumAttempts: Int {
        get { self.state.mutate { $0.machine.attemptLimit } }
        set {
            guarantee(
                newValue >= 1,
                "\(type(of: self)) '\(self.name ?? "unnamed")': maximumAttempts is the number of attempts in all, the "
                    + "first included, and must be 1 or more, not \(newValue)"
            )
            self.maximumRetries = newValue
        }
    }

    /// The attempt running now or last, counted from 1.
    public var currentAttempt: Int {
        self.state.mutate { $0.machine.currentAttempt }
    }

    /// Whether a failed attempt waits for ``retry()`` instead of retrying at once.
    ///
    /// Always `false` for a ``GroupOperation``, which makes one attempt: setting it to `true` there traps.
    open var manualRetry: Bool {
        get { self.state.mutate { !$0.machine.isGroup && $0.machine.manualRetry } }
        set { self.state.mutate { $0.machine.manualRetry = newValue } }
    }

    /// Whether an attempt ends only when ``finish(success:)`` is called, rather than when ``execute()`` returns.
    ///
    /// Read when an attempt starts. Always `true` for a ``GroupOperation``, which finishes when its operations have,
    /// and for an ``AsyncOperation``, whose attempt ends with its body: setting it to `false` there traps.
    open var manualFinish: Bool {
        get { self.state.mutate { $0.machine.isGroup || $0.machine.manualFinish } }
        set { self.state.mutate { $0.machine.manualFinish = newValue } }
    }

    /// How long the operation waits before an automatic retry; ``RetryPolicy/immediate`` by default.
    ///
    /// Read when an attempt fails. The delay passes on ``retryClock``, with ``retryJitterSeed``'s jitter. It does not
    /// apply to ``manualRetry``, nor to a ``GroupOperation``, which makes one attempt.
    public var retryPolicy: RetryPolicy {
        get { self.state.mutate { $0.machine.retryPolicy } }
        set { self.state.mutate { $0.machine.retryPolicy = newValue } }
    }

    /// Decides whether an attempt that failed with an error is retried: `nil` (the default) retries every failure.
    ///
    /// It gets the error and the number of the attempt that failed, from 1, and returns `false` for an error that
    /// another attempt cannot cure (a refused login, a missing file): the operation then finishes at once,
    /// unsuccessfully, with ``error`` set, instead of retrying. It is asked only when a retry would otherwise follow:
    /// not after the last attempt, nor once the operation was cancelled.
    ///
    /// It sees the errors that end attempts: an ``AsyncOperation``'s body's thrown error, or the error given to
    /// ``finish(throwing:)``. A failure without an error (``success`` set to `false`, or ``finish(success:)`` with
    /// `false`) does not ask it, and is retried as before. It is called on the thread that ended the attempt, outside
    /// the operation's lock, and applies to ``manualRetry`` too: a refused error does not wait for ``retry()``.
    public var shouldRetry: (@Sendable (_ error: any Error, _ attempt: Int) -> Bool)? {
        get { self.state.mutate { $0.shouldRetry } }
        set { self.state.mutate { $0.shouldRetry = newValue } }
    }

    /// The clock on which the ``retryPolicy`` delays pass: `ContinuousClock` by default.
    ///
    /// A test gives the operation a clock that it moves itself, such as `ConcurrencyKitTesting`'s `TestClock`, and
    /// the operation's retries then wait for that clock instead of real time. Read when an attempt fails.
    public var retryClock: any Clock<Duration> {
        get { self.state.mutate { $0.retryClock } }
        set { self.state.mutate { $0.retryClock = newValue } }
    }

    /// The seed of the ``retryPolicy``'s jitter, so that its delays are exactly reproducible; `nil` (the default)
    /// draws them from the system's random numbers.
    ///
    /// With a seed, the delay before retry `n` is ``RetryPolicy/delay(beforeRetry:jitterSeed:)`` with that seed:
    /// the same in every run. Give operations that retry at the same time different seeds, or none: with one seed
    /// their retries would come together, which jitter is there to prevent. Read when an attempt fails.
    public var retryJitterSeed: UInt64? {
        get { self.state.mutate { $0.retryJitterSeed } }
        set { self.state.mutate { $0.retryJitterSeed = newValue } }
    }

    /// The error the last attempt that has ended ended with, or `nil` if it ended without one (or none has ended).
    ///
    /// An ``AsyncOperation``'s attempt ends with the error its body throws; any other attempt with the error given
    /// to ``finish(throwing:)``.
    public var error: (any Error)? {
        self.state.mutate { $0.error }
    }

    /// Whether a failed attempt waits for ``retry()`` now (with ``manualRetry``).
    public var isWaitingForRetry: Bool {
        self.state.mutate { $0.machine.isWaitingForRetry }
    }

    /// Whether ``pause()`` was called more recently than ``resume()``.
    public var isPaused: Bool {
        self.state.mutate { $0.machine.isPaused }
    }

    // MARK: Operation

    /// Always `true`: the operation runs its attempts on its own schedule.
    override open var isAsynchronous: Bool { true }

    /// Whether the operation has started and not finished.
    override open var isExecuting: Bool { self.state.mutate { $0.machine.isExecuting } }

    /// Whether the operation has finished: all its attempts ran, or it was cancelled before it started.
    override open var isFinished: Bool { self.state.mutate { $0.machine.isFinished } }

    /// Starts the first attempt, or finishes at once if the operation was cancelled before it started.
    ///
    /// - Precondition: The operation has not started before.
    override open func start() {
        self.willChangeValue(forKey: "isExecuting")
        let action = self.state.mutate { $0.machine.start() }
        self.didChangeValue(forKey: "isExecuting")
        guard let action else {
            halt("ConcurrentOperation '\(self.name ?? "unnamed")': start() was called twice")
        }
        self.apply(action)
    }

    /// Cancels the operation.
    ///
    /// One that has not started finishes without running its block when its queue starts it; a running attempt may
    /// go on, but no further attempt starts; one waiting for ``retry()``, for its ``retryPolicy`` delay or for its
    /// next attempt to begin finishes at once, unsuccessfully, and ``retry()`` then does nothing. A delay's wait on
    /// ``retryClock`` is cancelled at once: it keeps neither a timer nor the operation until its deadline.
    override open func cancel() {
        // The machine hears of the cancel before Foundation does: Foundation's `cancel()` makes a waiting operation
        // ready at once, and its queue may call `start()` on another thread before `super.cancel()` returns.
        let (action, delay) = self.state.mutate { state in
            let action = state.machine.cancel()
            defer { state.delay = nil }
            return (action, state.delay)
        }
        super.cancel()
        delay?.cancel()
        self.apply(action)
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

    /// Ends the attempt that runs now with `success`: the operation then retries or finishes.
    ///
    /// Call it from any thread. With ``manualFinish`` it is how an attempt ends; otherwise an attempt also ends when
    /// ``execute()`` returns. An attempt never ends before its ``execute()`` has returned: called while it runs,
    /// `finish` records `success` and the attempt ends when ``execute()`` returns. The next attempt then runs on the
    /// attempt's own thread, after ``execute()`` has returned, or on a global queue; never inside `finish`, so a
    /// `finish` from another thread never runs it. Calls after the operation finished, between attempts, or a second
    /// time for the same attempt do nothing.
    ///
    /// This form cannot tell which attempt it comes from: it ends whichever attempt runs when it is called. A
    /// callback that may come late or twice, and so reach a later attempt, should name its attempt with
    /// ``finish(attempt:success:)``.
    /// - Parameter success: Whether the attempt succeeded.
    open func finish(success: Bool = true) {
        self.endAttempt(nil, success: success)
    }

    /// Ends the attempt that runs now as failed with `error`: ``shouldRetry`` decides whether another follows.
    ///
    /// The attempt's ``error`` is `error`. In every other way it is `finish(success: false)`: see
    /// ``finish(success:)``. A callback that may come late or twice should name its attempt with
    /// ``finish(attempt:throwing:)``.
    /// ```swift
    /// import OperationQueuing
    ///
    /// struct Unauthorized: Error {}
    ///
    /// let login = ConcurrentOperation { operation in operation.finish(throwing: Unauthorized()) }
    /// login.maximumAttempts = 5
    /// login.shouldRetry = { error, _ in !(error is Unauthorized) }  // another attempt cannot cure it
    /// queuer.addOperation(login)
    /// login.waitUntilFinished()
    /// print(login.currentAttempt, login.success, login.error is Unauthorized)  // 1 false true
    /// ```
    /// - Parameter error: Why the attempt failed.
    open func finish(throwing error: any Error) {
        self.endAttempt(nil, success: false, error: error)
    }

    /// Ends attempt `attempt` as failed with `error`, if it is the attempt that runs now; otherwise does nothing.
    ///
    /// ``finish(throwing:)`` for a named attempt, as ``finish(attempt:success:)`` is ``finish(success:)`` for one.
    /// - Parameters:
    ///   - attempt: The number of the attempt that ends, as ``currentAttempt`` read while it ran.
    ///   - error: Why the attempt failed.
    open func finish(attempt: Int, throwing error: any Error) {
        self.endAttempt(attempt, success: false, error: error)
    }

    /// Ends attempt `attempt` with `success`, if it is the attempt that runs now; otherwise does nothing.
    ///
    /// Read ``currentAttempt`` when the attempt starts (in ``execute()`` or the block), and pass it here from the
    /// attempt's callbacks: a late or duplicate call meant for an earlier attempt then cannot end a later one. In
    /// every other way it is ``finish(success:)``.
    /// ```swift
    /// import OperationQueuing
    ///
    /// let upload = ConcurrentOperation { operation in
    ///     let attempt = operation.currentAttempt
    ///     client.upload(file) { error in operation.finish(attempt: attempt, success: error == nil) }
    /// }
    /// upload.manualFinish = true
    /// queuer.addOperation(upload)
    /// upload.waitUntilFinished()  // here the first upload fails
    /// print(upload.currentAttempt, upload.success)  // 2 true
    /// ```
    /// - Parameters:
    ///   - attempt: The number of the attempt that ends, as ``currentAttempt`` read while it ran.
    ///   - success: Whether the attempt succeeded.
    open func finish(attempt: Int, success: Bool = true) {
        self.endAttempt(attempt, success: success)
    }

    /// Ends attempt `number` (or the running attempt, when `nil`) with `success` and `error`; how every `finish` and
    /// an ``AsyncOperation``'s body end an attempt.
    ///
    /// A failure with an error that a retry would follow goes to ``shouldRetry`` first, outside the lock; the
    /// attempt then ends as numbered, so that a `finish` of another attempt in the meantime leaves it alone.
    func endAttempt(_ number: Int?, success: Bool, error: (any Error)? = nil) {
        var number = number
        var retryAllowed = true
        if !success, let error {
            let question = self.state.mutate { state in
                state.shouldRetry.flatMap { filter in
                    state.machine.attemptRetriedOnFailure(number).map { (filter, $0) }
                }
            }
            if let (filter, attempt) = question {
                number = attempt
                retryAllowed = filter(error, attempt)
            }
        }
        let action = self.state.mutate { state -> OperationStateMachine.Action in
            guard state.machine.acceptsFinish(attempt: number) else { return .none }
            state.error = error
            return state.machine.finish(attempt: number, success: success, retryAllowed: retryAllowed)
        }
        self.apply(action)
    }

    /// The number of the attempt whose ``execute()`` runs on this thread now; read only from ``execute()``.
    var attemptBeingExecuted: Int { self.executingAttempt }

    /// Starts the next attempt of an operation waiting after a failed attempt with ``manualRetry``.
    ///
    /// The attempt runs on a global queue, never on the caller's thread. While the operation is paused (its
    /// ``Queuer`` was paused), the attempt starts at ``resume()``. While an attempt runs, after the last attempt,
    /// after the operation was cancelled, or after it finished, it does nothing.
    open func retry() {
        self.apply(self.state.mutate { $0.machine.retry() })
    }

    /// Records a pause in ``isPaused``; ``Queuer/pause()`` calls it.
    ///
    /// While paused, ``retry()`` defers its attempt to ``resume()``. Override it to pause long-running work, and
    /// call `super`.
    open func pause() {
        self.state.mutate { $0.machine.pause() }
    }

    /// Clears ``isPaused``, and starts an attempt that ``retry()`` deferred; ``Queuer/resume()`` calls it.
    ///
    /// Override it to resume long-running work, and call `super`.
    open func resume() {
        self.apply(self.state.mutate { $0.machine.resume() })
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

    /// Who an operation was handed to: a method of a ``Queuer``, or a ``GroupOperation``.
    ///
    /// Described only when a second hand-over traps: building the description on every add, with the queue's name
    /// read from Foundation, cost a `Queuer` of tiny operations about a tenth of its time.
    struct Claimant {
        /// The receiver: `Queuer 'downloads'`, or `GroupOperation`.
        let receiver: String
        /// The receiver's method, if it has one.
        let method: StaticString?

        /// The receiver as the trap message shows it: `Queuer 'downloads' (addOperation)`.
        var description: String {
            self.method.map { "\(self.receiver) (\($0))" } ?? self.receiver
        }
    }

    /// Records that the operation was handed to `owner`; traps if it was handed to something already.
    ///
    /// An operation runs once, in one place: adding it twice would hang a chain, or crash Foundation on a worker
    /// thread far from the mistake.
    func claim(by owner: Claimant) {
        let previous = self.state.mutate { state -> Claimant? in
            guard let previous = state.owner else {
                state.owner = owner
                return nil
            }
            return previous
        }
        if let previous {
            let adder = owner.description
            let earlier = previous.description
            let place = earlier == adder ? "by an earlier call of the same method" : "to \(earlier)"
            halt(
                "\(adder): ConcurrentOperation '\(self.name ?? "unnamed")' was already added \(place); "
                    + "an operation runs once, in one place"
            )
        }
    }

    /// Makes this operation a group's: one attempt, ended by `finish(success:)`, whatever is set.
    func makeGroup() {
        self.state.mutate { $0.machine.isGroup = true }
    }

    // MARK: Applying the machine's actions

    /// Does what the state machine decided, outside the lock, on the calling thread: the one place that acts.
    ///
    /// A next attempt is handed to a global queue here, never run on the caller's thread; only the attempt loop
    /// runs one inline, after the attempt before it, on that attempt's thread.
    private func apply(_ action: OperationStateMachine.Action) {
        chaosPoint(.operationState)  // between the machine's decision and acting on it: where a cancel or finish lands
        switch action {
        case .none:
            break
        case .execute(let attempt):
            self.runAttempts(from: attempt)
        case .scheduleAttempt(let attempt, let policy):
            self.schedule(attempt, after: self.delay(before: attempt, policy))
        case .finish(let wasExecuting):
            self.finishOperation(wasExecuting: wasExecuting)
        }
    }

    /// Runs attempts on the calling thread, from `first`, one after another, for as long as each is followed by the
    /// next at once.
    ///
    /// A loop rather than recursion, so that any number of retries runs in constant stack.
    private func runAttempts(from first: Int) {
        var attempt = first
        while true {
            self.executingAttempt = attempt
            self.execute()
            let action = self.state.mutate { state in
                let unfinished = state.machine.acceptsFinish(attempt: attempt)
                let action = state.machine.executeReturned(attempt)
                // An attempt that ended here, without a finish, ended without an error.
                if unfinished && !state.machine.acceptsFinish(attempt: attempt) { state.error = nil }
                return action
            }
            guard case .scheduleAttempt(let next, let policy) = action else { return self.apply(action) }
            let delay = self.delay(before: next, policy)
            guard delay <= .zero else { return self.schedule(next, after: delay) }
            // The next attempt follows at once, here; a cancel that came meanwhile has finished the operation.
            guard case .execute(let begun) = self.state.mutate({ $0.machine.begin(next) }) else { return }
            attempt = begun
        }
    }

    /// The wait before attempt `attempt`: `policy`'s for an automatic retry, with the operation's jitter seed; none
    /// for a manual one (`nil`).
    private func delay(before attempt: Int, _ policy: RetryPolicy?) -> Duration {
        guard let policy else { return .zero }
        return policy.delay(beforeRetry: attempt - 1, jitterSeed: self.retryJitterSeed)
    }

    /// Begins attempt `attempt` on a global queue after `delay` has passed on ``retryClock``, unless the operation
    /// was cancelled meanwhile.
    ///
    /// The wait is a ``RetryTimer``, which ``cancel()`` cancels: its timer goes at once. It holds the operation only
    /// weakly (its queue keeps it alive until it finishes), and the attempt runs on the global queue, never in a task,
    /// since an attempt may block its thread.
    private func schedule(_ attempt: Int, after delay: Duration) {
        let queue = DispatchQueue.global(qos: self.qualityOfService.dispatchQoS)
        guard delay > .zero else {
            queue.async { self.beginScheduled(attempt) }
            return
        }
        let timer = RetryTimer(after: delay, on: self.retryClock, queue: queue) { [weak self] in
            self?.beginScheduled(attempt)
        }
        let cancelled = self.state.mutate { state -> Bool in
            guard state.machine.phase == .pending(attempt: attempt) else { return true }
            state.delay = timer
            return false
        }
        if cancelled { timer.cancel() }  // a cancel() that came before the wait was recorded
    }

    /// Begins attempt `attempt`, handed to a queue, unless the operation was cancelled meanwhile.
    private func beginScheduled(_ attempt: Int) {
        let (action, delay) = self.state.mutate { state in
            defer { state.delay = nil }
            return (state.machine.begin(attempt), state.delay)
        }
        _ = delay  // the wait that has ended, released here rather than under the lock
        self.apply(action)
    }

    /// Finishes the operation once, changing state between KVO notifications.
    ///
    /// First it takes itself off the dependents list of each of its dependencies. Foundation on Linux keeps an
    /// operation's dependents unretained and walks them when that operation finishes; an operation cancelled while a
    /// dependency still runs finishes first, and its queue may free it, so the dependency would read freed memory (a
    /// crash in `Operation.observeValue`). `removeDependency` takes the dependency's own lock, so it also waits out a
    /// walk already under way. Whatever kind of `Operation` the dependency is, and whether or not it is ever queued,
    /// nothing is kept alive for it.
    private func finishOperation(wasExecuting: Bool) {
        for dependency in self.dependencies { self.removeDependency(dependency) }
        self.willChangeValue(forKey: "isFinished")
        if wasExecuting { self.willChangeValue(forKey: "isExecuting") }
        self.state.mutate { $0.machine.markFinished() }
        if wasExecuting { self.didChangeValue(forKey: "isExecuting") }
        self.didChangeValue(forKey: "isFinished")
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
