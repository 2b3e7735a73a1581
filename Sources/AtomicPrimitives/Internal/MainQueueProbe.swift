import Dispatch
import Synchronization

/// The mechanism of ``MainQueueDoctor``, over any target queue so that tests can stand in a queue of their own.
///
/// A send while nothing is watched starts a watch: a marker block goes to the target queue, and a timer on a global
/// queue checks after the patience whether the marker has run. If it has not, the report is made, once. Once a marker
/// has run, the target is known to be drained, and the probe stops watching for good.
///
/// Everything a send needs to know is in one word, ``phase``: a send reads it with one relaxed atomic load, and does
/// more only in ``Phase/idle``, to start a watch. The patience, behind a lock, is read only where a watch starts or
/// ends, and where it is set.
package final class MainQueueProbe: Sendable {
    private enum Phase: Int {
        /// The patience is `nil`: sends start nothing.
        case off
        /// No watch running; the next send starts one.
        case idle
        /// A marker waits on the target.
        case watching
        /// The patience ran out: the report is being made.
        case reporting
        /// The target was seen drained, or the report was made: nothing more to do, whatever the patience.
        case settled
    }

    private let phase: Atomic<Int>
    // Safety of the phase's changes: those between `off`, `idle` and `watching`, and the end of a watch, are made
    // while `patienceStorage` is locked, so that they agree with the patience. A marker's `watching` → `settled`
    // needs no lock: it is a compare-and-exchange that only a watch's end competes with, and that takes it as well.
    private let patienceStorage: AtomicBox<Duration?>
    private let target: @Sendable () -> DispatchQueue
    private let report: @Sendable (String) -> Void

    /// Creates a probe.
    ///
    /// - Parameters:
    ///   - target: The queue to watch.
    ///   - patience: How long a marker may wait; `nil`: off.
    ///   - report: Called once, on a global queue, with the warning.
    package init(
        target: @escaping @Sendable () -> DispatchQueue,
        patience: Duration?,
        report: @escaping @Sendable (String) -> Void
    ) {
        self.target = target
        self.phase = Atomic((patience == nil ? Phase.off : Phase.idle).rawValue)
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
                let (from, to) = newValue == nil ? (Phase.idle, Phase.off) : (Phase.off, Phase.idle)
                _ = self.phase.compareExchange(expected: from.rawValue, desired: to.rawValue, ordering: .relaxed)
            }
        }
    }

    /// Whether a send would start a watch: the probe is on, watches nothing, and has not settled.
    ///
    /// One relaxed atomic load: the whole cost of a send when the answer is `false`.
    package var isWatching: Bool {
        self.phase.load(ordering: .relaxed) == Phase.idle.rawValue
    }

    /// Whether a watch runs: its marker has not run, and its patience has not run out, or its report is being made.
    package var hasWatchRunning: Bool {
        let phase = self.phase.load(ordering: .acquiring)
        return phase == Phase.watching.rawValue || phase == Phase.reporting.rawValue
    }

    /// Whether the probe has settled: the target was seen drained, or the report has been made.
    package var isSettled: Bool {
        self.phase.load(ordering: .acquiring) == Phase.settled.rawValue
    }

    /// Notes a send to the target; starts a watch if the probe is on, watches nothing, and has not settled.
    package func noteSend() {
        guard self.isWatching else { return }
        self.startWatch()
    }

    private func startWatch() {
        let started = self.patienceStorage.mutate { patience -> Duration? in
            guard
                let patience,
                self.phase.compareExchange(
                    expected: Phase.idle.rawValue,
                    desired: Phase.watching.rawValue,
                    ordering: .relaxed
                ).exchanged
            else { return nil }
            return patience
        }
        guard let patience = started else { return }
        self.target().async {
            // Drained: settled, unless the watch has ended (a report settles the probe when it is made).
            _ = self.phase.compareExchange(
                expected: Phase.watching.rawValue,
                desired: Phase.settled.rawValue,
                ordering: .acquiringAndReleasing
            )
        }
        // A patience too long for a Dispatch deadline never runs out: the watch ends only when the marker runs.
        guard let nanoseconds = patience.nanosecondsIfRepresentable else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
            self.endWatch(after: patience)
        }
    }

    /// Ends a watch whose patience ran out: reports, unless the marker has run or the probe was switched off since.
    private func endWatch(after patience: Duration) {
        let stuck = self.patienceStorage.mutate { current -> Bool in
            guard
                self.phase.compareExchange(
                    expected: Phase.watching.rawValue,
                    desired: Phase.reporting.rawValue,
                    ordering: .acquiringAndReleasing
                ).exchanged
            else { return false }  // the marker ran: settled
            guard current != nil else {
                self.phase.store(Phase.off.rawValue, ordering: .relaxed)
                return false
            }
            return true
        }
        guard stuck else { return }
        self.report(MainQueueDoctor.warning(after: patience))
        self.phase.store(Phase.settled.rawValue, ordering: .releasing)
    }
}
