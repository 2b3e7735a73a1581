import Dispatch
import Synchronization

/// The mechanism of ``MainQueueDoctor``, over any target queue so that tests can stand in a queue of their own.
///
/// A send to the target while nothing is watched starts a watch: a marker block goes to the target queue, and a
/// timer on the probe's clock checks after the patience whether the marker has run. If it has not, the report is made,
/// once. The first send to another queue sends a marker too, without a timer. Once any marker has run, the target is
/// known to be drained, and the probe stops watching for good: also in a program that sends nothing to the target.
///
/// A blocking call of the package made on the target notes itself (``noteBlocked(in:)``) while it blocks, so that the
/// report can name it: the usual reason why a program that drains the target still leaves the marker waiting.
///
/// Everything a send needs to know is in one word, `phase`: a send reads it with one relaxed atomic load, and does
/// more only before the target has been seen drained while no watch runs. The lock of the patience is taken only
/// where the patience is read or set, where a watch starts or ends, and where the first marker is sent.
package final class MainQueueProbe: Sendable {
    /// A blocking call of the package that the target's thread is in: the API, its async form, the caller's site.
    package struct BlockedCall: Sendable {
        /// The blocking call, as users write it: `"GCDGroup.wait()"`.
        package let api: StaticString
        /// What to write instead in async code: `"await group.waitForAll()"`.
        package let alternative: StaticString
        /// The caller's file.
        package let file: StaticString
        /// The caller's line.
        package let line: UInt
        /// Whether the caller runs inside a Swift concurrency task: async code that made the call through a
        /// synchronous function, or a main-actor task.
        package let isInsideTask: Bool

        package init(api: StaticString, alternative: StaticString, file: StaticString, line: UInt, isInsideTask: Bool) {
            self.api = api
            self.alternative = alternative
            self.file = file
            self.line = line
            self.isInsideTask = isInsideTask
        }
    }

    private enum Phase: Int {
        /// The patience is `nil`: sends start nothing.
        case off
        /// No marker sent yet: the next send, to any queue, sends one.
        case fresh
        /// No watch running; the next send to the target starts one.
        case idle
        /// A marker waits on the target, with a timer.
        case watching
        /// The patience ran out: the report is being made.
        case reporting
        /// The target was seen drained, or the report was made: nothing more to do, whatever the patience.
        case settled
    }

    private let phase: Atomic<Int>
    // Changes of `phase` between `off`, `fresh`, `idle` and `watching`, and the end of a watch, are made while
    // `patienceStorage` is locked, so that they agree with the patience. A marker settles the probe with a lock-free
    // compare-and-exchange, from any phase but `reporting`.
    private let patienceStorage: AtomicBox<Duration?>
    private let blockedCallStorage = AtomicBox<BlockedCall?>(nil, unobserved: ())
    private let patienceEndCount = Atomic<Int>(0)
    private let target: @Sendable () -> DispatchQueue
    private let report: @Sendable (String) -> Void
    /// Runs the end of a watch after the patience, on the probe's clock.
    private let runAfter: @Sendable (Duration, @escaping @Sendable () -> Void) -> Void

    /// Creates a probe.
    ///
    /// - Parameters:
    ///   - target: The queue to watch.
    ///   - patience: How long a marker may wait; `nil`: off.
    ///   - clock: The clock that measures the patience: the continuous clock, whose watches are Dispatch timers, or a
    ///     test's clock, which the test moves itself.
    ///   - report: Called once, on a global queue (or a task, on a test's clock), with the warning.
    package init(
        target: @escaping @Sendable () -> DispatchQueue,
        patience: Duration?,
        clock: some Clock<Duration> = ContinuousClock(),
        report: @escaping @Sendable (String) -> Void
    ) {
        self.runAfter = { clock.runAfter($0, $1) }
        self.target = target
        self.phase = Atomic((patience == nil ? Phase.off : Phase.fresh).rawValue)
        self.patienceStorage = AtomicBox(patience)
        self.report = report
    }

    /// How long a marker may wait before the report; `nil`: off.
    ///
    /// Switching off takes effect at once for sends, and a watch that is running ends without a report.
    package var patience: Duration? {
        get { self.patienceStorage.value }
        set {
            self.patienceStorage.mutate { patience in
                patience = newValue
                if newValue == nil {
                    _ = self.change(from: .fresh, or: .idle, to: .off)
                } else {
                    _ = self.change(from: .off, to: .fresh)
                }
            }
        }
    }

    /// Whether a send might start a watch: the probe is on, watches nothing, and has not settled.
    ///
    /// One relaxed atomic load: the whole cost of a send when the answer is `false`.
    package var isWatching: Bool {
        let phase = self.phase.load(ordering: .relaxed)
        return phase == Phase.fresh.rawValue || phase == Phase.idle.rawValue
    }

    /// Whether a report may still be made: the probe is on and has not settled.
    ///
    /// One relaxed atomic load: the whole cost of a blocking call on the target when the answer is `false`.
    package var mayReport: Bool {
        let phase = self.phase.load(ordering: .relaxed)
        return phase == Phase.fresh.rawValue || phase == Phase.idle.rawValue || phase == Phase.watching.rawValue
    }

    /// The blocking call of the package that the target's thread is in, if it is in one.
    package var blockedCall: BlockedCall? {
        self.blockedCallStorage.value
    }

    /// Notes that the target's thread is now in `call`, a blocking call of the package, or in none (`nil`).
    ///
    /// Called on the target, before the call blocks and after it returns; a call made inside another restores the
    /// outer one when it returns.
    /// - Returns: The call noted before, to restore when this one returns.
    @discardableResult
    package func noteBlocked(in call: BlockedCall?) -> BlockedCall? {
        self.blockedCallStorage.mutate { noted in
            defer { noted = call }
            return noted
        }
    }

    /// Whether a watch runs: its marker has not run, and its patience has not run out, or its report is being made.
    package var hasWatchRunning: Bool {
        let phase = self.phase.load(ordering: .acquiring)
        return phase == Phase.watching.rawValue || phase == Phase.reporting.rawValue
    }

    /// How many watches have come to the end of their patience, whatever they found there: for tests, which see by it
    /// that a watch's timer has come and gone, on a clock they move.
    package var patienceEnds: Int {
        self.patienceEndCount.load(ordering: .acquiring)
    }

    /// Whether the probe has settled: the target was seen drained, or the report has been made.
    package var isSettled: Bool {
        self.phase.load(ordering: .acquiring) == Phase.settled.rawValue
    }

    /// Notes a send to the target; starts a watch if the probe is on, watches nothing, and has not settled.
    package func noteSend() {
        guard self.isWatching else { return }
        let started = self.patienceStorage.mutate { patience -> Duration? in
            guard let patience, self.change(from: .fresh, or: .idle, to: .watching) else { return nil }
            return patience
        }
        guard let patience = started else { return }
        self.sendMarker()
        // On the continuous clock, a patience too long for a Dispatch deadline never runs out: the watch ends only
        // when the marker runs.
        self.runAfter(patience) { self.endWatch(after: patience) }
    }

    /// Notes a send to another queue than the target: the first one sends a marker, without a timer, so that the
    /// probe settles once the target is seen drained, even if nothing is ever sent to it.
    package func noteSendElsewhere() {
        guard self.phase.load(ordering: .relaxed) == Phase.fresh.rawValue else { return }
        let primed = self.patienceStorage.mutate { _ in self.change(from: .fresh, to: .idle) }
        if primed { self.sendMarker() }
    }

    /// Sends a marker to the target: when it runs, the target is drained, and the probe settles unless a report is
    /// being made (which settles it when it is made).
    private func sendMarker() {
        self.target().async {
            var current = self.phase.load(ordering: .relaxed)
            while current != Phase.reporting.rawValue && current != Phase.settled.rawValue {
                let (exchanged, original) = self.phase.compareExchange(
                    expected: current,
                    desired: Phase.settled.rawValue,
                    ordering: .acquiringAndReleasing
                )
                if exchanged { return }
                current = original
            }
        }
    }

    /// Ends a watch whose patience ran out: reports, unless the marker has run or the probe was switched off since.
    private func endWatch(after patience: Duration) {
        defer { self.patienceEndCount.add(1, ordering: .releasing) }
        let stuck = self.patienceStorage.mutate { current -> Bool in
            // The marker ran: settled.
            guard self.change(from: .watching, to: .reporting) else { return false }
            guard current != nil else {
                self.phase.store(Phase.off.rawValue, ordering: .relaxed)
                return false
            }
            return true
        }
        guard stuck else { return }
        self.report(MainQueueDoctor.warning(after: patience, blockedIn: self.blockedCall))
        self.phase.store(Phase.settled.rawValue, ordering: .releasing)
    }

    /// Moves the phase from `first`, or else from `second`, to `new`; `false` if it was neither.
    private func change(from first: Phase, or second: Phase? = nil, to new: Phase) -> Bool {
        if self.exchange(first, for: new) { return true }
        guard let second else { return false }
        return self.exchange(second, for: new)
    }

    private func exchange(_ old: Phase, for new: Phase) -> Bool {
        self.phase.compareExchange(
            expected: old.rawValue,
            desired: new.rawValue,
            ordering: .acquiringAndReleasing
        ).exchanged
    }
}
