/// A command waiting for a value's turn, as ``TurnStateMachine`` sees it.
protocol TurnWaiter {
    /// Whether the command passes no closure of the user's (a `get()` or `set(newValue:)`), so that the holder
    /// releasing the turn may apply it itself instead of handing it the turn.
    var isCombinable: Bool { get }
}

/// The part of a value's turn that the engine's lock guards, and every decision taken under that lock: who gets the
/// turn next, what a cancelled or newly arrived command does, when the value is destroyed.
///
/// Pure: it neither blocks, wakes, resumes nor calls anyone. ``TurnEngine`` keeps the lock-free fast path (the turn
/// word: one compare-and-exchange to take a free turn and one to give it back), takes its lock, calls one event
/// here, stores the turn word the event returns, and performs the returned action once the lock is released.
///
/// The hand-over policy, in one place (``released(combinedSoFar:)``), against the contract:
/// - every pending highest-priority command gets the turn before any pending lowest-priority one, and within a
///   priority commands get it in the order they queued (``PendingCommands``);
/// - the next command is either handed the turn, or, if it passes no closure of the user's, applied by the releasing
///   holder itself under the turn (flat combining) — in the same queue order, so combining reorders nothing. The
///   releaser applies at most ``combineLimit`` commands in a row; then it hands the turn to the next command, even a
///   combinable one, which applies itself and carries on combining: no thread is held for ever;
/// - the value is retired (destroyed) only when its holder is gone, nobody holds the turn and nobody waits, so it
///   outlives the last applied command;
/// - a command cancelled while it waits leaves the queue and is never applied; a command already taken out of the
///   queue (handed the turn, or being applied) is not cancelled: whichever of ``cancelled(id:)`` and
///   ``released(combinedSoFar:)`` takes the lock first wins.
struct TurnStateMachine<Waiter: TurnWaiter> {
    /// The most combinable commands one releaser applies before it hands the turn on.
    ///
    /// Each costs the releaser an assignment or a copy of the value and later a wake-up call (off the turn); 64 keep a
    /// thread's extra work under a few microseconds of the turn's time, and let many waiters share one releaser.
    static var combineLimit: Int { 64 }

    /// The commands that wait for the turn, in the order they get it.
    private var pending = PendingCommands<Waiter>()
    /// Whether the value's holder still exists.
    private(set) var isHolderAlive = true
    /// The last identifier handed to a waiting command.
    private var lastID: UInt64 = 0

    /// How many commands wait.
    var waitingCount: Int { self.pending.count }

    // MARK: A command arrives

    /// What a command that found the turn taken, and came to the lock, does next.
    enum ArrivalAction: Equatable {
        /// The turn is free: try to take it (free → held); on failure, ask again.
        case take
        /// A command holds the turn and nobody waits: mark it contended (held → contended), so that its release comes
        /// to the lock, then ``enqueue(_:id:priority:)``; on failure, ask again.
        case markContendedAndQueue
        /// The turn is already contended: ``enqueue(_:id:priority:)``.
        case queue
        /// The value is destroyed: the command fails with `valueContainerDeinited`.
        case refuse
    }

    /// A command arrives at the lock, having seen `turn` in the turn word.
    func commandArrived(turn: Int) -> ArrivalAction {
        switch turn {
        case TurnEngine.free: .take
        case TurnEngine.held: .markContendedAndQueue
        case TurnEngine.contended: .queue
        default: .refuse
        }
    }

    /// A fresh identifier for a waiting command, by which it can leave the queue when cancelled.
    mutating func nextID() -> UInt64 {
        self.lastID &+= 1
        return self.lastID
    }

    /// Queues `waiter` behind every pending command that comes before it; only once the turn is contended.
    mutating func enqueue(_ waiter: Waiter, id: UInt64, priority: CommandPriority) {
        self.pending.enqueue(waiter, id: id, priority: priority)
    }

    // MARK: The holder releases the turn

    /// What the contended release of the turn leads to.
    enum ReleaseAction {
        /// Store `turn`; hand the turn to `waiter`, which runs its command itself.
        case handOver(Waiter, turn: Int)
        /// Store `turn`; the releaser keeps the turn, applies `waiter`'s command for it, gives it its result, and
        /// releases the turn again with one more combined command.
        case apply(Waiter, turn: Int)
        /// Nobody waits: store ``TurnEngine/free``.
        case free
        /// Nobody waits and the holder is gone: store ``TurnEngine/retired`` and destroy the value.
        case retire
    }

    /// The holder of the turn releases it, at the lock, after applying `combinedSoFar` combined commands in a row.
    mutating func released(combinedSoFar: Int) -> ReleaseAction {
        guard let next = self.pending.popNext() else {
            return self.isHolderAlive ? .free : .retire
        }
        // Stays contended while the holder is gone, so that the last release comes to the lock and retires the turn.
        let turn = self.pending.count == 0 && self.isHolderAlive ? TurnEngine.held : TurnEngine.contended
        if next.isCombinable && combinedSoFar < Self.combineLimit {
            return .apply(next, turn: turn)
        }
        return .handOver(next, turn: turn)
    }

    // MARK: A waiting command is cancelled

    /// What the cancellation of a waiting `suspend` command leads to.
    enum CancelAction {
        /// It was still queued and has left the queue: resume it with `cancelled`; it never runs.
        case resumeCancelled(Waiter)
        /// It already left the queue: it holds the turn, or its command is applied; it returns its result.
        case none
    }

    /// The task of the waiting command `id` is cancelled.
    mutating func cancelled(id: UInt64) -> CancelAction {
        self.pending.remove(id: id).map(CancelAction.resumeCancelled) ?? .none
    }

    // MARK: The holder object is released

    /// What releasing the value's holder leads to.
    enum HolderReleasedAction: Equatable {
        /// Nobody holds the turn: retire it (free → retired) and destroy the value; on failure, ask again.
        case retireFreeTurn
        /// A command holds the turn and nobody waits: mark it contended (held → contended), so that its release
        /// comes to the lock and retires the turn; on failure, ask again.
        case markContended
        /// The turn is contended or retired already: its last release retires it.
        case none
    }

    /// The value's holder is released, and the turn word reads `turn`: commands issued from now on fail.
    mutating func holderReleased(turn: Int) -> HolderReleasedAction {
        self.isHolderAlive = false
        switch turn {
        case TurnEngine.free: return .retireFreeTurn
        case TurnEngine.held: return .markContended
        default: return .none
        }
    }
}
