import Synchronization

/// The value and its ``TurnEngine``: what command objects and pending commands refer to.
///
/// Whoever holds the turn may read and write `value` without the lock: every hand-over writes the turn word with
/// release ordering and every new holder reads it with acquire ordering (``TurnEngine/tookTurnOver()``), so each
/// holder sees the writes of the one before, and ThreadSanitizer sees that it does.
///
/// The value lives as long as its holder, or as long as a command issued before the holder's release still runs or
/// waits: then the engine retires the turn and the value is destroyed. A kept command object keeps only this husk.
@usableFromInline
final class ValueStorage<Value>: TurnEngine.ValueOwner, @unchecked Sendable {
    // Safety: `value` is only touched by the holder of `engine`'s turn, or by whoever retired the turn.
    @usableFromInline
    let engine = TurnEngine()

    /// The value; `nil` once destroyed, after which the turn is retired and no command can touch it.
    ///
    /// The turn, not a runtime check, keeps accesses exclusive; a nested command fails before it touches the value.
    @usableFromInline
    @exclusivity(unchecked)
    var value: Value?

    /// The value's turn as a lock, for the lock-order checker of debug builds: a `wait` command holds it while its
    /// closure runs (and, for manual completion, until `done`).
    @usableFromInline
    let lockOrder: LockOrderIdentity

    @usableFromInline
    init(_ value: Value, file: StaticString, line: UInt) {
        self.value = value
        self.lockOrder = LockOrderIdentity(type: QueueSafeValue<Value>.self, file: file, line: line)
        self.engine.ownValue(by: self, type: QueueSafeValue<Value>.self, file: file, line: line)
    }

    /// Destroys the value, once the turn is retired: no command can touch it any more.
    @usableFromInline
    func destroyValue() {
        self.value = nil
    }

    /// This storage, or `nil` once its holder was released.
    @inlinable
    var ifHolderAlive: ValueStorage<Value>? {
        self.engine.isHolderAlive ? self : nil
    }

    /// The value, for the holder of the turn.
    @inlinable
    var current: Value {
        self.value.unsafelyUnwrapped
    }

    /// Runs a command closure on the value, recording the thread so that a nested `wait` fails fast, and the thread
    /// and `site` (where the command was made, a `PackedSite`; 0 if unknown) for the wait report.
    @inlinable
    func runClosure<Result>(at site: UInt = 0, _ body: (inout Value) -> Result) -> Result {
        let previous = self.engine.closureStarted(at: site)
        defer { self.engine.closureEnded(previous) }
        return body(&self.value!)
    }

    /// Made when a manual-completion command first returns from its closure before its `done`.
    private let completionWatch = AtomicLazyReference<ManualCompletionWatch<Value>>()

    /// Hands a manual-completion command whose closure returned without calling `done` to the value's
    /// ``ManualCompletionWatch``, for ``ManualCompletionDoctor``.
    @usableFromInline
    func watchCompletion(_ latch: CompletionLatch, schedule: StaticString, file: StaticString, line: UInt) {
        let watch = self.completionWatch.load() ?? self.completionWatch.storeIfNil(ManualCompletionWatch())
        watch.watch(latch, schedule: schedule, file: file, line: line)
    }

    /// Makes the value's ``ManualCompletionWatch`` with its patience measured on `clock`: before any command.
    func timeCompletionWatch(by clock: some Clock<Duration>) {
        _ = self.completionWatch.storeIfNil(ManualCompletionWatch(clock: clock))
    }

    /// Records that the holder was released; destroys the value now if no command holds the turn.
    func holderReleased() {
        if self.engine.holderReleased() { self.value = nil }
    }
}
