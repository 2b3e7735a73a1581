import AtomicPrimitives

/// Why a ``TestClock`` gave up waiting, with what slept on it at that moment.
///
/// The clock throws it instead of letting a test hang. Its ``description`` is written for the test log: it says
/// what the clock waited for, how long in real time, the clock's time, and the deadline of every sleeper.
public struct TestClockError: Error, CustomStringConvertible, Sendable {
    /// What the clock waited for and did not see.
    public enum Reason: Sendable, Equatable {
        /// ``TestClock/waitForSleepers(_:timeout:)`` saw fewer sleepers than `expected` within its time limit: the
        /// code under test did not reach its sleep.
        case sleepersMissing(expected: Int)
        /// ``TestClock/run(timeout:_:)`` waited for an operation while nothing could ever run: no task slept on the
        /// clock, none that it woke was still on its way back, and the operation did not finish. Moving the time
        /// cannot help: the operation waits for something else.
        case nothingCanRun
        /// ``TestClock/run(timeout:)`` or ``TestClock/run(timeout:_:)`` still moved the time after its time limit,
        /// having moved it at least 100 times: after every wake something slept again, as an endless timer or polling
        /// loop does.
        case neverIdle
        /// A task that the clock woke did not come back out of its sleep within the time limit: the actor or
        /// executor it needs is blocked.
        case wakeNotResumed
        /// ``TestClock/run(timeout:_:)`` found the operation's tasks in a deadlock: nothing slept on the clock, no
        /// wake was on its way back, and tasks of the operation waited in a cycle in ConcurrencyKit's waits (each
        /// for a semaphore or a value's turn that the next one holds), as `WaitReport` names it. The run throws
        /// this as soon as it sees the cycle, without waiting for its timeout; the description holds the report.
        case deadlock
    }

    /// What the clock waited for and did not see.
    public let reason: Reason
    /// The clock's time when it gave up.
    public let now: TestClock.Instant
    /// The deadlines of the sleepers when it gave up, earliest first.
    public let deadlines: [TestClock.Instant]
    /// How long, in real time, it waited at most.
    public let timeout: Duration
    /// How many times the run moved the time, for the report of a clock that never became idle.
    let advances: Int
    /// The waits of the package in progress when it gave up, for a deadlock or a run that nothing could move.
    let waitReport: WaitReport?

    /// The report: what the clock waited for, how long, its time, and every sleeper.
    public var description: String {
        let sleepers = "The clock's time is \(self.now); \(Self.describe(self.deadlines))."
        switch self.reason {
        case .sleepersMissing(let expected):
            return """
                TestClock: waited \(self.timeout) of real time for \(expected) sleeper\(expected == 1 ? "" : "s"), \
                and they did not all come: the code under test has not reached its sleep (it waits for something \
                else, sleeps on another clock, or has finished). \(sleepers)
                """
        case .nothingCanRun:
            let waits = self.waitReport.map { "\n\($0)" } ?? ""
            return """
                TestClock: nothing can ever run. The operation given to run(timeout:_:) has not finished, no task \
                sleeps on this clock and no woken task is on its way back, and nothing changed for \(self.timeout) \
                of real time: moving the time cannot help, the operation waits for something else (a signal, a \
                continuation, a lock, a sleep on another clock). \(sleepers)\(waits)
                """
        case .neverIdle:
            return """
                TestClock: run did not become idle within \(self.timeout) of real time: it moved the time \
                \(self.advances) times, and after every wake something slept again, as an endless timer or polling \
                loop does. Stop that loop; give run(timeout:_:) the operation to wait for, so that it stops when the \
                operation returns; or, for a simulation that really takes longer than this, pass a longer timeout. \
                \(sleepers)
                """
        case .wakeNotResumed:
            return """
                TestClock: a task that the clock woke at \(self.now) has not come back out of its sleep within \
                \(self.timeout) of real time: the actor or executor it needs is blocked. \(sleepers)
                """
        case .deadlock:
            return """
                TestClock: the operation given to run(timeout:_:) is deadlocked: its tasks wait for each other in \
                a cycle, nothing sleeps on this clock, and moving the time cannot help. \(sleepers)
                \(self.waitReport.map(\.description) ?? "")
                """
        }
    }

    /// "no sleepers", "1 sleeper, until 5.0 seconds", or "3 sleepers, until 1.0 seconds, …": at most 20 listed.
    private static func describe(_ deadlines: [TestClock.Instant]) -> String {
        guard !deadlines.isEmpty else { return "no sleepers" }
        let shown = deadlines.prefix(20).map(\.description).joined(separator: ", ")
        let more = deadlines.count > 20 ? ", and \(deadlines.count - 20) more" : ""
        return "\(deadlines.count) sleeper\(deadlines.count == 1 ? "" : "s"), until \(shown)\(more)"
    }
}
