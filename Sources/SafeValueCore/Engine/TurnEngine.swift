import AtomicPrimitives
import Dispatch
import Synchronization

/// Who holds a value's turn and who waits for it, with the lock that guards that: everything about a command queue
/// that does not depend on the value's type.
///
/// Being non-generic, it costs no generic-metadata look-ups on the hot path, whatever the value's type.
@usableFromInline
final class TurnEngine: @unchecked Sendable {
    /// How a waiting command is told that the turn is now its own.
    @usableFromInline
    enum Waiter {
        /// A thread blocked in a `wait` command.
        case thread(ParkedThread)
        /// An `async` command: its job is sent to its queue. A job runs the command and returns the waiter that now
        /// holds the turn, for ``TurnEngine/runJobs(_:on:)`` to continue with.
        case job(DispatchQueue, @Sendable () -> Waiter?)
        /// A suspended `suspend` command: resumed with `true`.
        case task(UnsafeContinuation<Bool, Never>)

        @usableFromInline
        func grant() {
            switch self {
            case .thread(let thread): thread.grant()
            // A job starts with `tookTurnOver()`.
            case .job(let queue, let job):
                queue.async { TurnEngine.runJobs(job, on: queue) }
                MainQueueDoctor.noteSend(to: queue)
            case .task(let continuation): continuation.resume(returning: true)
            }
        }
    }

    /// The turn, in one word: ``free``, ``held``, or ``contended`` (held, and commands may wait in `pending`).
    ///
    /// A command on a free value takes the turn with one compare-and-exchange and gives it back with another; the
    /// lock and the queues are used only once somebody has to wait, as in a futex-based mutex.
    @usableFromInline
    let turn = Atomic<Int>(TurnEngine.free)

    @usableFromInline static let free = 0
    @usableFromInline static let held = 1
    @usableFromInline static let contended = 2

    // Safety: `pending` and `nextWaiterID` are only touched while `lock` is held.
    private let lock = MutexLock()
    private var pending = PendingCommands<Waiter>()
    private var nextWaiterID: UInt64 = 0

    /// The thread running one of the value's command closures, or 0.
    @usableFromInline
    let closureThread = Atomic<UInt>(0)

    /// Whether the value's holder still exists: commands issued after it was released fail.
    @usableFromInline
    let holderIsAlive = Atomic<Bool>(true)

    @usableFromInline
    init() {}

    /// How many commands wait for the turn now.
    var waitingCount: Int {
        self.lock.withLock { self.pending.count }
    }

    // MARK: Taking the turn

    /// Takes the turn if it is free: the uncontended path of every command.
    @inlinable
    func tryAcquire() -> Bool {
        self.turn.compareExchange(expected: Self.free, desired: Self.held, ordering: .acquiring).exchanged
    }

    /// Under the lock: takes the turn if it is free, or marks it contended so that its release looks at `pending`.
    ///
    /// - Returns: `true` if the caller now holds the turn; `false` if it must queue (still under the lock).
    private func acquireOrMarkContended() -> Bool {
        while true {
            switch self.turn.load(ordering: .relaxed) {
            case Self.free:
                if self.tryAcquire() { return true }
            case Self.held:
                let marked = self.turn.compareExchange(
                    expected: Self.held,
                    desired: Self.contended,
                    ordering: .relaxed
                )
                if marked.exchanged { return false }
            default:
                return false
            }
        }
    }

    /// Queues `waiter` unless the turn can be taken at once; call with the lock held.
    private func acquireOrEnqueue(_ waiter: @autoclosure () -> Waiter, priority: CommandPriority) -> Bool {
        guard !self.acquireOrMarkContended() else { return true }
        self.nextWaiterID &+= 1
        self.pending.enqueue(waiter(), id: self.nextWaiterID, priority: priority)
        return false
    }

    /// Blocks the calling thread until it holds the turn.
    @inlinable
    func acquireBlocking(_ priority: CommandPriority) {
        if !self.tryAcquire() { self.acquireBlockingSlowly(priority) }
    }

    /// The turn is taken: waits for it, first by watching for it to come free while nobody is queued, then in the
    /// queue.
    ///
    /// Taking a turn that comes free while no command is queued keeps the contract — every queued command still runs
    /// in its order — and saves two threads that take turns a wake-up per command, as an adaptive mutex does.
    @usableFromInline
    func acquireBlockingSlowly(_ priority: CommandPriority) {
        watching: for _ in 0..<Self.looksBeforeQueueing {
            switch self.turn.load(ordering: .relaxed) {
            case Self.free: if self.tryAcquire() { return }
            case Self.held: continue
            default: break watching  // commands are queued: join them
            }
        }
        let thread = ParkedThread()
        let acquired = self.lock.withLock { self.acquireOrEnqueue(.thread(thread), priority: priority) }
        if !acquired {
            thread.waitForGrant()
            self.tookTurnOver()
        }
    }

    /// How many times a blocking command looks for a free turn before it queues: a few microseconds.
    ///
    /// That is longer than most command closures run. With 200 looks, two threads taking turns queued more often: 925
    /// ns a command against 673 with 2,000, measured before the retain traffic was removed.
    private static let looksBeforeQueueing = 2000

    /// Sends `job` to `queue` once it holds the turn, at once if the turn is free.
    ///
    /// Never blocks.
    @usableFromInline
    func submit(_ priority: CommandPriority, on queue: DispatchQueue, job: @escaping @Sendable () -> Waiter?) {
        let acquired =
            self.tryAcquire() || self.lock.withLock { self.acquireOrEnqueue(.job(queue, job), priority: priority) }
        if acquired { Waiter.job(queue, job).grant() }
    }

    /// Runs `job` on `queue`, then every job the turn passes to next that belongs on the same queue, inline.
    ///
    /// Handing the turn to a job for the queue we are already on needs no dispatch: running it here keeps it on its
    /// queue and in order, and saves a dispatch per command. Any other waiter is granted as usual. A job returns a
    /// waiter only when none of the user's code runs between its release and the next command, so chaining can
    /// never leave a waiting command behind a completion that blocks.
    static func runJobs(_ job: @Sendable () -> Waiter?, on queue: DispatchQueue) {
        var next = job()
        while let waiter = next {
            guard case .job(let nextQueue, let nextJob) = waiter, nextQueue === queue else {
                return waiter.grant()
            }
            next = nextJob()
        }
    }

    /// Suspends the calling task until it holds the turn, without blocking a thread.
    ///
    /// - Returns: `false` if the task was cancelled before it got the turn; it then does not hold it.
    @usableFromInline
    func acquireSuspending(_ priority: CommandPriority) async -> Bool {
        if Task.isCancelled { return false }
        if self.tryAcquire() { return true }
        let id = self.lock.withLock { () -> UInt64 in
            self.nextWaiterID &+= 1
            return self.nextWaiterID
        }
        let acquired = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
                let immediate = self.lock.withLock { () -> Bool? in
                    if self.acquireOrMarkContended() { return true }
                    if Task.isCancelled { return false }
                    self.pending.enqueue(.task(continuation), id: id, priority: priority)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            if case .task(let continuation)? = self.lock.withLock({ self.pending.remove(id: id) }) {
                continuation.resume(returning: false)
            }
        }
        if acquired { self.tookTurnOver() }
        return acquired
    }

    // MARK: Giving the turn back

    /// Ends the caller's turn and returns the waiter that now holds it, which the caller must wake with
    /// ``Waiter/grant()``.
    ///
    /// The one way to give the turn back. Whatever must come before the next holder's work — an `async` command's
    /// completion sent to its queue — is done before calling this, on both paths: once the turn is free, a command
    /// issued on another thread may take it at once and send its own job ahead.
    @inlinable
    func release() -> Waiter? {
        if self.turn.compareExchange(expected: Self.held, desired: Self.free, ordering: .releasing).exchanged {
            return nil
        }
        return self.handOver()
    }

    /// The contended release: picks the next holder under the lock, or frees the turn if every waiter has gone.
    ///
    /// The turn word is written with release ordering on every path, and every new holder reads it with acquire
    /// ordering (``tookTurnOver()``), so each hand-over is a happens-before edge that ThreadSanitizer sees and weak
    /// memory models honour, whatever wakes the next holder.
    @usableFromInline
    func handOver() -> Waiter? {
        self.lock.withLock {
            let next = self.pending.popNext()
            let word = next == nil ? Self.free : (self.pending.count == 0 ? Self.held : Self.contended)
            self.turn.store(word, ordering: .releasing)
            return next
        }
    }

    /// Called by a waiter that was handed the turn, before it touches the value: pairs with ``handOver()``.
    @inlinable
    func tookTurnOver() {
        _ = self.turn.load(ordering: .acquiring)
    }

    // MARK: The holder

    /// Records that the holder was released; commands issued from now on fail.
    func holderReleased() {
        self.holderIsAlive.store(false, ordering: .releasing)
    }

    /// Whether the holder still exists.
    @inlinable
    var isHolderAlive: Bool {
        self.holderIsAlive.load(ordering: .acquiring)
    }

    // MARK: Command closures

    /// Records that a command closure starts on the calling thread; returns what to pass to ``closureEnded(_:)``.
    @inlinable
    func closureStarted() -> UInt {
        // Only the turn holder writes this, so a load and a store do what an exchange would, for less.
        let previous = self.closureThread.load(ordering: .relaxed)
        self.closureThread.store(currentThreadID(), ordering: .relaxed)
        return previous
    }

    /// Records that the command closure started by ``closureStarted()`` has ended.
    @inlinable
    func closureEnded(_ previous: UInt) {
        self.closureThread.store(previous, ordering: .relaxed)
    }

    /// Whether a `wait` command issued on the calling thread must fail with `reentrantWait`: one of the value's
    /// command closures, or one of its `async` completions, runs on this thread.
    ///
    /// Inside a command closure the value is held, so waiting for it would deadlock. Inside a completion the queue
    /// is held: on a serial queue, the command holding the value or next in line may be one whose job must run on
    /// that same queue, so waiting would deadlock too.
    @inlinable
    var isReentrantOnCurrentThread: Bool {
        self.closureThread.load(ordering: .relaxed) == currentThreadID()
            || (self.runningCompletions.load(ordering: .relaxed) > 0 && self.isInsideOwnCompletion)
    }

    /// Whether one of this value's `async` completions runs on the calling thread.
    @usableFromInline
    var isInsideOwnCompletion: Bool {
        Self.completions.contains(self.id)
    }

    // MARK: Completions

    /// The values whose `async` completions run on each thread.
    private static let completions = ThreadFrameStack()

    /// How many of this value's completions run now, on any thread.
    ///
    /// A `wait` looks up the per-thread record only while this is above 0: a thread inside one of the completions
    /// has raised it itself, so a relaxed load sees it, and the usual `wait` pays no thread-local look-up.
    @usableFromInline
    let runningCompletions = Atomic<Int>(0)

    /// This engine's identity in ``completions``.
    private var id: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    /// Runs an `async` command's completion, recorded so that a `wait` on this value inside it fails fast.
    @usableFromInline
    func runCompletion(_ completion: () -> Void) {
        self.runningCompletions.add(1, ordering: .relaxed)
        Self.completions.withFrame(id: self.id, on: Self.completions.chain) { _ in completion() }
        self.runningCompletions.subtract(1, ordering: .relaxed)
    }
}
