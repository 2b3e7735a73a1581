import Synchronization

/// A waiting command that passes no closure of the user's (`get()`, `set(newValue:)`), which the holder releasing the
/// turn may apply itself (flat combining): the turn then goes straight on to the next command instead of waiting for
/// this one's thread to wake or its task to be scheduled.
///
/// Made only when the command has to wait: an uncontended command takes the turn itself and allocates nothing. It
/// ends in one of two ways, decided under the engine's lock by ``TurnStateMachine/released(combinedSoFar:)``:
/// applied by the releaser (``wakeApplied()``), or handed the turn like any other command (``grantTurn()``), when the
/// releaser has combined enough commands in a row.
///
/// The non-generic part, for ``TurnEngine``; ``CombinedValueCommand`` knows the value.
@usableFromInline
class CombinedCommand: @unchecked Sendable {
    /// How the waiting command is woken.
    @usableFromInline
    enum Wake {
        /// A thread blocked in a `wait` command.
        case thread(ParkedThread)
        /// A suspended `suspend` command.
        case task(UnsafeContinuation<TurnEngine.Acquisition, Never>)
    }

    // Safety: `wake` is written by the issuing thread before the command is queued under the engine's lock, and read
    // after that lock took it out of the queue. The subclass's result is written by the releaser before it publishes
    // `applied` (releasing), and read by the issuer after it woke and read `applied` (acquiring): that pair is the
    // happens-before edge, also for a task resumed before it had finished suspending, an order the runtime keeps with
    // atomics that ThreadSanitizer does not see. `nextApplied` is the releaser's own.
    @usableFromInline
    var wake: Wake?
    private let applied = Atomic<Bool>(false)
    /// Whether the releaser applied the command: its result is ready, and the command does not hold the turn.
    ///
    /// Read it after waking, before reading the result.
    @usableFromInline
    var wasApplied: Bool { self.applied.load(ordering: .acquiring) }
    /// The next command applied by the same releaser, which wakes them all once it handed the turn on.
    var nextApplied: CombinedCommand?

    @usableFromInline
    init() {}

    /// Applies the command to the value, for the releaser, which holds the turn: ``CombinedValueCommand`` does.
    func apply() {
        halt("CombinedCommand.apply() is implemented by CombinedValueCommand")
    }

    /// Gives the applied command its result.
    ///
    /// Wakes its thread, or resumes its task with ``TurnEngine/Acquisition/applied``. Off the turn: the releaser has
    /// handed the turn on first.
    func wakeApplied() {
        self.applied.store(true, ordering: .releasing)
        switch self.wake {
        case .thread(let thread): thread.grant()
        case .task(let continuation): continuation.resume(returning: .applied)
        case nil: halt("CombinedCommand: a command was applied before it was queued")
        }
    }

    /// Hands the command the turn: it applies itself, and releases the turn as any holder does.
    func grantTurn() {
        switch self.wake {
        case .thread(let thread): thread.grant()
        case .task(let continuation): continuation.resume(returning: .acquired)
        case nil: halt("CombinedCommand: a command was handed the turn before it was queued")
        }
    }

    /// Tells the command that its task was cancelled while it was queued: it was never applied.
    func resumeCancelled() {
        guard case .task(let continuation) = self.wake else {
            halt("CombinedCommand: only a suspend command is cancelled while it waits")
        }
        continuation.resume(returning: .cancelled)
    }
}
