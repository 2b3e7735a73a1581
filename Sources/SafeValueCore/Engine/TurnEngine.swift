import AtomicPrimitives
import Dispatch
import Synchronization

/// Who holds a value's turn and who waits for it, with the lock that guards that: everything about a command queue
/// that does not depend on the value's type.
///
/// A thin shell around ``TurnStateMachine``: it keeps the lock-free fast path (the turn word), takes the lock to ask
/// the machine what an event leads to, and acts outside the lock (grants, resumes, sends jobs, applies combined
/// commands, destroys the value).
///
/// Being non-generic, it costs no generic-metadata look-ups on the hot path, whatever the value's type.
@usableFromInline
final class TurnEngine: @unchecked Sendable {
    /// How a waiting command is told that the turn is now its own.
    @usableFromInline
    enum Waiter: TurnWaiter {
        /// A thread blocked in a `wait` command.
        case thread(ParkedThread)
        /// An `async` command: its job is sent to its queue. A job runs the command and returns what its release
        /// handed on, for ``TurnEngine/runJobs(_:on:)`` to continue with.
        case job(DispatchQueue, @Sendable () -> HandOff?)
        /// A suspended `suspend` command: resumed with ``Acquisition/acquired``.
        case task(UnsafeContinuation<Acquisition, Never>)
        /// A `get()` or `set(newValue:)`, `wait` or `suspend`, that a releaser may apply for it.
        case combined(CombinedCommand)

        var isCombinable: Bool {
            if case .combined = self { return true }
            return false
        }

        /// Hands the waiter the turn.
        @usableFromInline
        func grant() {
            switch self {
            case .thread(let thread): thread.grant()
            // A job starts with `tookTurnOver()`.
            case .job(let queue, let job):
                queue.async { TurnEngine.runJobs(job, on: queue) }
                MainQueueDoctor.noteSend(to: queue)
            case .task(let continuation): continuation.resume(returning: .acquired)
            case .combined(let command): command.grantTurn()
            }
        }

        /// Tells a waiter whose task was cancelled that it left the queue.
        func resumeCancelled() {
            switch self {
            case .task(let continuation): continuation.resume(returning: .cancelled)
            case .combined(let command): command.resumeCancelled()
            case .thread, .job: halt("TurnEngine: only a suspend command is cancelled while it waits")
            }
        }
    }

    /// What a release leaves its caller to do, outside the lock: ``grant()`` it.
    @usableFromInline
    enum HandOff {
        /// Hand the turn to this waiter.
        case grant(Waiter)
        /// Apply this combined command, and those after it, under the turn (``TurnEngine/combine(from:)``).
        case combine(TurnEngine, CombinedCommand)
        /// Nobody: the holder is gone and no command is left, so the value is destroyed. Holds the value's owner, so
        /// that it lives until it has destroyed the value, whoever let go of it last.
        case retire(any ValueOwner)

        @usableFromInline
        func grant() {
            switch self {
            case .grant(let waiter): waiter.grant()
            case .combine(let engine, let command): engine.combine(from: command)
            case .retire(let owner): owner.destroyValue()
            }
        }
    }

    /// How a `suspend` command's wait for the turn ended.
    @usableFromInline
    enum Acquisition: Sendable {
        /// It holds the turn.
        case acquired
        /// A releaser applied its combined command: its result is ready, and it does not hold the turn.
        case applied
        /// Its task was cancelled first; it does not hold the turn.
        case cancelled
        /// The holder was released and the value destroyed first; it does not hold the turn.
        case valueDestroyed
    }

    /// How a blocking combined command's wait ended.
    @usableFromInline
    enum Combining {
        /// It holds the turn: it applies itself and releases the turn.
        case holdsTurn
        /// A releaser applied it: its result is ready.
        case applied
        /// The value was destroyed first.
        case valueDestroyed
    }

    /// The turn, in one word: ``free``, ``held``, ``contended``, or ``retired``.
    ///
    /// A command on a free value takes the turn with one compare-and-exchange and gives it back with another; the
    /// lock and the queues are used only once somebody has to wait, as in a futex-based mutex. `contended` sends the
    /// release to the lock, where ``TurnStateMachine`` picks the next holder or retires the turn.
    @usableFromInline
    let turn = Atomic<Int>(TurnEngine.free)

    /// Nobody holds the turn and nobody waits.
    @usableFromInline static let free = 0
    /// A command holds the turn, nobody waits, and the holder lives: the release can just free it.
    @usableFromInline static let held = 1
    /// A command holds the turn, and either commands may wait in the machine's queue or the holder is gone.
    @usableFromInline static let contended = 2
    /// The holder is gone and no command runs or waits: whoever retired the turn destroys the value, the turn is
    /// nobody's for ever, and every command fails.
    @usableFromInline static let retired = 3

    // Safety: `machine` is only touched while `lock` is held.
    private let lock = MutexLock()
    private var machine = TurnStateMachine<Waiter>()

    /// The thread running one of the value's command closures, or 0.
    @usableFromInline
    let closureThread = Atomic<UInt>(0)

    /// Where the command whose closure runs was made, a `PackedSite` (0 if unknown): for the wait report.
    @usableFromInline
    let closureSite = Atomic<UInt>(0)

    /// Whether the value's holder still exists.
    ///
    /// For the lock-free check of every command: commands issued after it was released fail. Mirrors
    /// ``TurnStateMachine/isHolderAlive``, written with it under the lock.
    @usableFromInline
    let holderIsAlive = Atomic<Bool>(true)

    /// What holds the value and destroys it once the turn is ``retired``.
    @usableFromInline
    protocol ValueOwner: AnyObject {
        /// Destroys the value: called once, by whoever retired the turn, outside the lock.
        func destroyValue()
    }

    // Safety: written once, by the owner's initializer, before the engine is shared. Unowned, since the owner owns
    // the engine; whoever calls `release()` or `holderReleased()` keeps the owner alive for the call, and the hand-off
    // that `handOver()` returns to destroy the value holds it strongly.
    private unowned(unsafe) var owner: (any ValueOwner)?

    #if DEBUG
    /// Called when a blocking command begins to wait for the turn (``observeWaiting(_:)``); guarded by `lock`.
    private var waitObserver: (@Sendable (Bool) -> Void)?
    #endif

    @usableFromInline
    init() {}

    /// Debug builds: calls `observer` when a blocking command begins to wait for the turn.
    ///
    /// It runs on the command's own thread, with whether the command has the highest priority; for the contract's
    /// property tests. Release builds ignore it.
    func observeWaiting(_ observer: @escaping @Sendable (Bool) -> Void) {
        #if DEBUG
        self.lock.withLock { self.waitObserver = observer }
        #endif
    }

    /// Tells the engine who holds its value.
    ///
    /// Call once, before any command: ``ValueStorage`` does in its initializer.
    func ownValue(by owner: any ValueOwner, type: Any.Type, file: StaticString, line: UInt) {
        self.owner = owner
        self.valueType = type
        self.madeAt = PackedSite.pack(file: file, line: line)
    }

    // Safety: written once, by the owner's initializer, before the engine is shared.
    /// The holder's type, for the wait report: `QueueSafeValue<Int>`.
    private var valueType: Any.Type = Void.self
    /// Where the holder was made, a `PackedSite`, for the wait report.
    private var madeAt = PackedSite.none

    /// How many commands wait for the turn now.
    var waitingCount: Int {
        self.lock.withLock { self.machine.waitingCount }
    }

    // MARK: Taking the turn

    /// Takes the turn if it is free: the uncontended path of every command.
    @inlinable
    func tryAcquire() -> Bool {
        self.turn.compareExchange(expected: Self.free, desired: Self.held, ordering: .acquiring).exchanged
    }

    /// What a command that came to the lock can do.
    private enum Claim {
        /// It holds the turn now.
        case taken
        /// It is queued (the turn is marked contended, so that its release looks at the queue).
        case queued
        /// The value is destroyed: it fails.
        case retired
    }

    /// Under the lock: takes the turn if it is free, or queues `waiter` as the machine decides.
    private func claimOrEnqueue(
        _ waiter: @autoclosure () -> Waiter,
        id: UInt64? = nil,
        priority: CommandPriority
    )
        -> Claim
    {
        while true {
            switch self.machine.commandArrived(turn: self.turn.load(ordering: .relaxed)) {
            case .take:
                if self.tryAcquire() { return .taken }
            case .markContendedAndQueue:
                let marked = self.turn.compareExchange(expected: Self.held, desired: Self.contended, ordering: .relaxed)
                guard marked.exchanged else { continue }
                self.machine.enqueue(waiter(), id: id ?? self.machine.nextID(), priority: priority)
                return .queued
            case .queue:
                self.machine.enqueue(waiter(), id: id ?? self.machine.nextID(), priority: priority)
                return .queued
            case .refuse:
                return .retired
            }
        }
    }

    /// The turn is taken: queues at once, behind every pending command that comes before this one, and waits there
    /// for the turn to be handed over.
    ///
    /// A command that finds the turn taken never takes it by watching the turn word: it would be pending, yet
    /// invisible to the queue, and could overtake commands that were queued before it. The waiting thread watches its
    /// own grant for a while before it sleeps (``ParkedThread``), so that two threads taking turns do not wake each
    /// other for every command.
    ///
    /// Once the thread sleeps, the wait report shows it waiting for the turn in `call`.
    @usableFromInline
    func acquireBlockingSlowly(_ priority: CommandPriority, as call: BlockingCall) -> Bool {
        let thread = ParkedThread()
        switch self.lock.withLock({ self.claimOrEnqueue(.thread(thread), priority: priority) }) {
        case .taken:
            return true
        case .retired:
            return false
        case .queued:
            self.observeWaiting(priority)
            thread.waitForGrant(reporting: (self, call))
            self.tookTurnOver()
            return true
        }
    }

    /// As ``acquireBlockingSlowly(_:)``, for a command that passes no closure: queued, it may be applied by the
    /// releaser instead of being handed the turn.
    @usableFromInline
    func combineBlocking(_ command: CombinedCommand, priority: CommandPriority, as call: BlockingCall) -> Combining {
        let thread = ParkedThread()
        command.wake = .thread(thread)
        switch self.lock.withLock({ self.claimOrEnqueue(.combined(command), priority: priority) }) {
        case .taken:
            return .holdsTurn
        case .retired:
            return .valueDestroyed
        case .queued:
            self.observeWaiting(priority)
            thread.waitForGrant(reporting: (self, call))
            if command.wasApplied { return .applied }
            self.tookTurnOver()
            return .holdsTurn
        }
    }

    /// Debug builds: the command is queued; from here on it waits, and is pending.
    private func observeWaiting(_ priority: CommandPriority) {
        #if DEBUG
        self.lock.withLock { self.waitObserver }?(priority == .highest)
        #endif
    }

    /// Sends `job` to `queue` once it holds the turn, at once if the turn is free.
    ///
    /// Never blocks.
    /// - Returns: `false` if the value was destroyed first (its holder is gone): the job will never run.
    @usableFromInline
    func submit(_ priority: CommandPriority, on queue: DispatchQueue, job: @escaping @Sendable () -> HandOff?) -> Bool {
        if !self.tryAcquire() {
            switch self.lock.withLock({ self.claimOrEnqueue(.job(queue, job), priority: priority) }) {
            case .taken: break
            case .queued: return true
            case .retired: return false
            }
        }
        Waiter.job(queue, job).grant()
        return true
    }

    /// Runs `job` on `queue`, then every job the turn passes to next that belongs on the same queue, inline.
    ///
    /// Handing the turn to a job for the queue we are already on needs no dispatch: running it here keeps it on its
    /// queue and in order, and saves a dispatch per command. Any other hand-off is granted as usual. A job returns a
    /// hand-off only when none of the user's code runs between its release and the next command, so chaining can
    /// never leave a waiting command behind a completion that blocks.
    static func runJobs(_ job: @Sendable () -> HandOff?, on queue: DispatchQueue) {
        var next = job()
        while let handOff = next {
            guard case .grant(.job(let nextQueue, let nextJob)) = handOff, nextQueue === queue else {
                return handOff.grant()
            }
            next = nextJob()
        }
    }

    /// Suspends the calling task until it holds the turn, without blocking a thread; with `combined`, a releaser may
    /// apply the command instead (``Acquisition/applied``).
    ///
    /// A cancellation and the hand-over race for the command under the lock: if the cancellation takes it out of the
    /// queue first, it never runs and returns ``Acquisition/cancelled``; once the hand-over took it out, it runs (or
    /// was applied) and returns its result.
    /// - Returns: ``Acquisition/acquired`` once it holds the turn, ``Acquisition/applied``, or why it gave up.
    @usableFromInline
    func acquireSuspending(_ priority: CommandPriority, combined: CombinedCommand? = nil) async -> Acquisition {
        if Task.isCancelled { return .cancelled }
        if self.tryAcquire() { return .acquired }
        let id = self.lock.withLock { self.machine.nextID() }
        var parked: TaskWaitEntry?
        let acquisition = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Acquisition, Never>) in
                let waiter: Waiter
                if let combined {
                    combined.wake = .task(continuation)
                    waiter = .combined(combined)
                } else {
                    waiter = .task(continuation)
                }
                let immediate = self.lock.withLock { () -> Acquisition? in
                    // Checked under the lock: a cancellation that came before found nothing queued to remove.
                    if Task.isCancelled { return .cancelled }
                    switch self.claimOrEnqueue(waiter, id: id, priority: priority) {
                    case .taken: return .acquired
                    case .retired: return .valueDestroyed
                    case .queued: return nil
                    }
                }
                if let immediate {
                    continuation.resume(returning: immediate)
                } else {
                    parked = TaskWaits.begin(on: self, as: Self.suspendCall(priority))
                }
            }
        } onCancel: {
            if case .resumeCancelled(let waiter) = self.lock.withLock({ self.machine.cancelled(id: id) }) {
                waiter.resumeCancelled()
            }
        }
        if let parked { TaskWaits.end(parked) }
        switch acquisition {
        case .acquired: self.tookTurnOver()
        // Pairs with the releaser's publishing it, before the caller reads the result.
        case .applied: _ = combined?.wasApplied
        case .cancelled, .valueDestroyed: break
        }
        return acquisition
    }

    /// How the wait report names a `suspend` command's wait for the turn at `priority`; its site is not known.
    private static func suspendCall(_ priority: CommandPriority) -> BlockingCall {
        let api: StaticString =
            switch priority {
            case .highest: "QueueSafeValue.suspend.highestPriority"
            case .lowest: "QueueSafeValue.suspend.lowestPriority"
            }
        return BlockingCall(api: api, alternative: "", file: "", line: 0)
    }

    // MARK: Giving the turn back

    /// Ends the caller's turn and returns what now happens to it, which the caller must perform with
    /// ``HandOff/grant()``.
    ///
    /// The one way to give the turn back. Once it returns, a command issued on another thread may take the turn at
    /// once and send its own job to the queue. So whatever must come before the next holder's work is either done
    /// before calling this (a manual-completion command sends its completion to the queue first; that completion
    /// waits for this release before it starts) or runs in the caller's own block on the queue, before that block
    /// returns (an `async` command's completion, run inline right after the release, ahead of any job sent to the
    /// same serial queue). When the holder is gone and nobody waits, the hand-off returned is
    /// ``HandOff/retire(_:)``: granting it destroys the value. When the next command passes no closure, it is
    /// ``HandOff/combine(_:_:)``: granting it applies that command and those after it.
    ///
    /// - Parameter combinedSoFar: How many combined commands the caller applied in a row before this release.
    /// - Returns: What the caller must ``HandOff/grant()``, or `nil` when the turn is free.
    @inlinable
    func release(combinedSoFar: Int = 0) -> HandOff? {
        chaosPoint(.turnHandOver)
        if self.turn.compareExchange(expected: Self.held, desired: Self.free, ordering: .releasing).exchanged {
            return nil
        }
        return self.handOver(combinedSoFar: combinedSoFar)
    }

    /// The contended release: asks the machine for the next holder under the lock, and stores the turn word it
    /// gives.
    ///
    /// The turn word is written with release ordering on every path, and every new holder reads it with acquire
    /// ordering (``tookTurnOver()``), so each hand-over is a happens-before edge that ThreadSanitizer sees and weak
    /// memory models honour, whatever wakes the next holder.
    @usableFromInline
    func handOver(combinedSoFar: Int) -> HandOff? {
        chaosPoint(.turnHandOver)
        return self.lock.withLock {
            switch self.machine.released(combinedSoFar: combinedSoFar) {
            case .handOver(let next, let word):
                self.turn.store(word, ordering: .releasing)
                return .grant(next)
            case .apply(let next, let word):
                self.turn.store(word, ordering: .releasing)
                guard case .combined(let command) = next else {
                    halt("TurnEngine: only a combined command is applied by the releaser")
                }
                return .combine(self, command)
            case .free:
                self.turn.store(Self.free, ordering: .releasing)
                return nil
            case .retire:
                self.turn.store(Self.retired, ordering: .releasing)
                return self.owner.map(HandOff.retire)
            }
        }
    }

    /// Flat combining: applies `first` and every combined command the turn passes to after it, for their issuers,
    /// under the turn the caller still holds; then hands the turn on, and only then wakes the issuers of the applied
    /// commands with their results, so that no wake-up lies on the turn's path.
    ///
    /// The machine stops the run at the first command that passes a closure, or after
    /// ``TurnStateMachine/combineLimit`` commands.
    func combine(from first: CombinedCommand) {
        var head = first
        var tail = first
        var command = first
        var count = 0
        var next: HandOff?
        while true {
            command.apply()
            count += 1
            next = self.release(combinedSoFar: count)
            guard case .combine(_, let following)? = next else { break }
            tail.nextApplied = following
            tail = following
            command = following
        }
        next?.grant()
        while true {
            let following = head.nextApplied
            head.nextApplied = nil
            head.wakeApplied()
            guard let following else { break }
            head = following
        }
    }

    /// Called by a waiter that was handed the turn, before it touches the value: pairs with ``handOver(combinedSoFar:)``.
    @inlinable
    func tookTurnOver() {
        _ = self.turn.load(ordering: .acquiring)
    }

    // MARK: The holder

    /// Records that the holder was released: commands issued from now on fail, and the value is destroyed as soon
    /// as no command holds the turn and none waits.
    ///
    /// - Returns: `true` if that is now: the turn was free and is retired, and the caller must destroy the value
    ///   (outside the lock, since its `deinit` is the user's code). `false` if a command holds the turn: the last
    ///   release retires it and destroys the value.
    func holderReleased() -> Bool {
        self.lock.withLock {
            self.holderIsAlive.store(false, ordering: .releasing)
            while true {
                switch self.machine.holderReleased(turn: self.turn.load(ordering: .relaxed)) {
                case .retireFreeTurn:
                    // Acquiring: the destruction comes after the last command's writes.
                    let retired = self.turn.compareExchange(
                        expected: Self.free,
                        desired: Self.retired,
                        ordering: .acquiring
                    )
                    if retired.exchanged { return true }
                case .markContended:
                    // Sends the release to the lock, where the machine sees that the holder is gone.
                    let marked = self.turn.compareExchange(
                        expected: Self.held,
                        desired: Self.contended,
                        ordering: .relaxed
                    )
                    if marked.exchanged { return false }
                case .none:
                    return false  // contended: the release comes to the lock anyway
                }
            }
        }
    }

    /// Whether the holder still exists.
    @inlinable
    var isHolderAlive: Bool {
        self.holderIsAlive.load(ordering: .acquiring)
    }

    // MARK: Command closures

    /// Records that a command closure starts on the calling thread; returns what to pass to ``closureEnded(_:)``.
    ///
    /// - Parameter site: Where the command was made, a `PackedSite`; 0 if unknown.
    /// - Returns: The thread that ran a closure before, for ``closureEnded(_:)``.
    @inlinable
    func closureStarted(at site: UInt) -> UInt {
        // Only the turn holder writes these, so a load and a store do what an exchange would, for less.
        let previous = self.closureThread.load(ordering: .relaxed)
        self.closureSite.store(site, ordering: .releasing)
        self.closureThread.store(currentThreadID(), ordering: .releasing)
        return previous
    }

    /// Records that the command closure started by ``closureStarted(at:)`` has ended.
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

extension TurnEngine: WaitTarget {
    package var waitResource: WaitReport.Resource {
        WaitReport.Resource(
            type: "\(self.valueType)",
            name: nil,
            madeAt: PackedSite.describe(self.madeAt),
            identity: WaitRecords.identity(of: self)
        )
    }

    /// The thread in a command closure, if one runs; a turn held by a command between closures (a manual command
    /// before its `done`, or one in the instant between taking the turn and starting its closure) has no holder the
    /// engine can name.
    package var waitHolding: WaitHolding {
        guard let thread = WaitHolding.read(holder: self.closureThread, site: self.closureSite) else {
            let state = self.turn.load(ordering: .relaxed) == Self.retired ? "retired" : "held"
            return WaitHolding(state: "\(state) by a command outside its closure")
        }
        return WaitHolding(holders: [.init(id: thread.word, site: thread.site)])
    }
}
