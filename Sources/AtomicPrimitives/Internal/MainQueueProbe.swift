import Dispatch
import Synchronization

/// The mechanism of ``MainQueueDoctor``, over any target queue so that tests can stand in a queue of their own.
///
/// A send while nothing is watched starts a watch: a marker block goes to the target queue, and a timer on a global
/// queue checks after the patience whether the marker has run. If it has not, the report is made, once. Once a marker
/// has run, the target is known to be drained, and the probe stops watching for good.
package final class MainQueueProbe: Sendable {
    private enum Phase: Int {
        /// No watch running; the next send starts one.
        case idle
        /// A marker waits on the target.
        case watching
        /// The patience ran out: the report is being made.
        case reporting
        /// The target was seen drained, or the report was made: nothing more to do.
        case settled
    }

    private let phase = Atomic<Int>(Phase.idle.rawValue)
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
        self.patienceStorage = AtomicBox(patience)
        self.report = report
    }

    /// How long a marker may wait before the report; `nil`: off.
    package var patience: Duration? {
        get { self.patienceStorage.value }
        set { self.patienceStorage.mutate { $0 = newValue } }
    }

    /// Whether a send could still start a watch: the probe is on and has not settled.
    package var isWatching: Bool {
        self.phase.load(ordering: .relaxed) == Phase.idle.rawValue && self.patience != nil
    }

    /// Whether the probe has settled: the target was seen drained, or the report has been made.
    package var isSettled: Bool {
        self.phase.load(ordering: .acquiring) == Phase.settled.rawValue
    }

    /// Notes a send to the target; starts a watch if none runs and the probe has not settled.
    package func noteSend() {
        guard self.phase.load(ordering: .relaxed) == Phase.idle.rawValue, let patience = self.patience else { return }
        guard
            self.phase.compareExchange(
                expected: Phase.idle.rawValue,
                desired: Phase.watching.rawValue,
                ordering: .acquiringAndReleasing
            ).exchanged
        else { return }
        self.target().async {
            // Drained: settled, unless the report has begun (it settles the probe when it is made).
            _ = self.phase.compareExchange(
                expected: Phase.watching.rawValue,
                desired: Phase.settled.rawValue,
                ordering: .acquiringAndReleasing
            )
        }
        let (seconds, attoseconds) = patience.components
        let delay: DispatchTimeInterval =
            seconds < 1_000_000_000
            ? .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)) : .never
        guard delay != .never else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
            let stuck = self.phase.compareExchange(
                expected: Phase.watching.rawValue,
                desired: Phase.reporting.rawValue,
                ordering: .acquiringAndReleasing
            ).exchanged
            guard stuck else { return }
            self.report(MainQueueDoctor.warning(after: patience))
            self.phase.store(Phase.settled.rawValue, ordering: .releasing)
        }
    }
}
