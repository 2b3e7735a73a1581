import Dispatch
import Synchronization

/// Watches the package's waits, off by default: reports a wait that has lasted too long, or a deadlock, once.
///
/// ```swift
/// import AtomicPrimitives
///
/// WaitWatchdog.start(after: .seconds(10))
/// print(WaitWatchdog.isRunning)  // true
/// WaitWatchdog.stop()
/// print(WaitWatchdog.isRunning)  // false
/// ```
///
/// Every period it takes a ``WaitReport``, and fires when the report holds a resource with a wait on it that has lasted
/// longer than the threshold, or a deadlock, that it has not fired for yet: it fires once per stall, however long the
/// stall lasts and however many threads pile onto the stuck resource, and again only for a new one. A deadlock is reported as soon as a look sees it (and a second look confirms it), without
/// waiting for the threshold. By default it writes the report to standard error; give it a handler to log the report
/// your own way, or to end the process.
///
/// The watchdog is one timer on a queue of its own; it never blocks a waiter or a holder, and an idle process pays
/// one look at the records per period. To have it see `GCDQueue.sync` waits too, turn on
/// ``WaitReport/recordsQueueSyncs``. The period is a quarter of the threshold, between 10 ms and 1 s.
public enum WaitWatchdog {
    /// Whether the watchdog runs.
    public static var isRunning: Bool {
        Self.state.mutate { $0 != nil }
    }

    /// Starts the watchdog, or restarts it with a new threshold and handler.
    ///
    /// - Parameters:
    ///   - threshold: How long a wait may last before it is reported; more than zero.
    ///   - handler: Gets the report each time the watchdog fires, on the watchdog's queue; `nil` (the default) writes
    ///     it to standard error.
    /// - Precondition: `threshold` is more than zero.
    public static func start(after threshold: Duration, handler: (@Sendable (WaitReport) -> Void)? = nil) {
        guarantee(threshold > .zero, "WaitWatchdog: the threshold must be more than zero, got \(threshold)")
        let period = min(max(threshold / 4, .milliseconds(10)), .seconds(1))
        // A queue for each run: a handler that blocks holds up its own run only, not one started after it.
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "ConcurrencyKit.WaitWatchdog"))
        let watch = Watch(threshold: threshold, handler: handler ?? Self.writeToStandardError)
        timer.setEventHandler { watch.look() }
        timer.schedule(deadline: .now(), repeating: Deadline.Span(period).interval ?? .seconds(1))
        let previous = Self.state.mutate { state in
            defer { state = Running(timer: timer) }
            return state
        }
        previous?.timer.cancel()
        timer.resume()
    }

    /// Stops the watchdog; a look in progress still ends.
    public static func stop() {
        Self.state.mutate { state in
            defer { state = nil }
            return state
        }?.timer.cancel()
    }

    /// The running timer, if any.
    private static let state = AtomicBox<Running?>(nil, unobserved: ())

    /// The timer of a running watchdog.
    private final class Running: @unchecked Sendable {
        // Safety: a timer source is safe to cancel from any thread; nothing else is done with it after `init`.
        let timer: any DispatchSourceTimer

        init(timer: any DispatchSourceTimer) {
            self.timer = timer
        }
    }

    private static let writeToStandardError: @Sendable (WaitReport) -> Void = { report in
        CLibrary.writeLineToStandardError("ConcurrencyKit WaitWatchdog: \(report)")
    }

    /// How many looks the watchdog has taken in this process, for tests that need to know it has looked again.
    package static var looks: Int {
        Self.lookCount.load(ordering: .relaxed)
    }

    private static let lookCount = Atomic<Int>(0)

    /// One run of the watchdog: what it has fired for.
    ///
    /// Touched only on the run's own queue.
    private final class Watch: @unchecked Sendable {
        let threshold: Duration
        let handler: @Sendable (WaitReport) -> Void
        /// The resources with a wait past the threshold, and the deadlocks (each by its waits), that it has fired
        /// for and that were still there at the last look: a stall is one resource that waits stay stuck on,
        /// however many threads come to wait on it.
        var stalledResources = Set<UInt>()
        var deadlocks = Set<Set<WaitReport.WaitKey>>()

        init(threshold: Duration, handler: @escaping @Sendable (WaitReport) -> Void) {
            self.threshold = threshold
            self.handler = handler
        }

        func look() {
            defer { WaitWatchdog.lookCount.add(1, ordering: .relaxed) }
            let report = WaitReport.current
            let stalled = Set(report.waits.filter { $0.duration > self.threshold }.map(\.resource.identity))
            let deadlocks = Set(report.deadlocks.map { Set($0.waits.map(\.key)) })
            let fresh = !stalled.isSubset(of: self.stalledResources) || !deadlocks.isSubset(of: self.deadlocks)
            // Forget what has gone on, so that a new stall on the same resource later fires again.
            self.stalledResources = stalled
            self.deadlocks = deadlocks
            if fresh { self.handler(report) }
        }
    }
}
