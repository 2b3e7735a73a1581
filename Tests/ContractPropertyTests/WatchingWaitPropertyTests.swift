import AtomicPrimitives
import Dispatch
import Foundation
import SafeValueCore
import Synchronization
import TestSupport
import Testing

/// QueueSafeValue: a `wait` command still watching the turn, not yet queued, is pending all the same.
///
/// "Every pending highest-priority command runs before any pending lowest-priority one" (issue 18.1). The usual culprit is the thread that has just released the value and issues its next lowest-priority command.
///
/// The round: thread R holds the value in a `wait` command closure. Thread L issues `wait.lowestPriority.set`; R waits
/// until the value's own queue count shows it queued (certainly pending). Then thread H issues
/// `wait.highestPriority.set`, and R releases as soon as H is certainly pending too, and at once issues another
/// `wait.lowestPriority.set`. H must start before both lowest-priority commands.
///
/// Knowing that H is pending without the value's queue count (a watcher is not counted): H reads its own CPU time,
/// publishes "issuing" (an atomic store) and at once calls the command. R waits until H has used at least G more CPU
/// time than before its flag. The few instructions from the flag to the library's first look at the turn make no
/// system call and cannot block, so a thread that has run G of CPU time past its flag is inside the call: it is
/// pending. G is twice the median CPU time of a whole `wait` command on a free value (of which that path is a
/// small prefix), and at least a microsecond. Per-thread CPU clocks read from another thread are exact on Linux, so
/// preemption and a loaded machine only make R wait longer; they cannot make a round count that should not.
/// Releasing as soon as G is reached leaves H still watching the turn (not yet queued) in many rounds.
@Suite("Contract properties: a watching wait is pending", .serialized, .timeLimit(.minutes(1)))
struct WatchingWaitPropertyTests {
    /// The median CPU time of `samples` whole `wait.set` commands on a free value, in nanoseconds.
    static func freeCommandNanoseconds(samples: Int = 201) -> UInt64 {
        let value = QueueSafeValue(value: 0)
        guard let clock = ThreadCPUClock.current() else { return 100_000 }
        var times: [UInt64] = []
        for _ in 0..<samples {
            let begin = clock.nanoseconds ?? 0
            value.wait.highestPriority.set { $0 += 1 }
            times.append((clock.nanoseconds ?? 0) &- begin)
        }
        return times.sorted()[samples / 2]
    }

    /// The median CPU time a `wait` spends from its issue until it has queued on a held value (its watching), in
    /// nanoseconds: for the report, to compare with G.
    static func watchingNanoseconds(samples: Int = 21) -> UInt64 {
        var times: [UInt64] = []
        for _ in 0..<samples {
            let value = QueueSafeValue(value: 0)
            let history = PropertyHistory()
            let hold = PriorityOrderPropertyTests.Hold(
                value,
                history: history,
                queue: DispatchQueue(label: "props.watch")
            )
            guard hold.isHolding() else { return 0 }
            let watcher = Watcher()
            let returned = DispatchSemaphore(value: 0)
            onNewThread {
                watcher.clock.mutate { $0 = ThreadCPUClock.current() }
                watcher.before.store(watcher.clock.value?.nanoseconds ?? 0, ordering: .relaxed)
                watcher.flag.set(1)
                value.wait.highestPriority.set { $0 += 1 }
                returned.signal()
            }
            guard watcher.flag.spin(until: 1), eventually({ value.waitingCommandCount == 1 }) else { return 0 }
            let now = watcher.clock.value?.nanoseconds ?? 0
            times.append(now &- watcher.before.load(ordering: .relaxed))
            hold.release()
            _ = returned.wait(timeout: deadline(5))
        }
        return times.sorted()[samples / 2]
    }

    /// Thread H's part in a round.
    final class Watcher: Sendable {
        let flag = SpinFlag()
        let clock = AtomicBox<ThreadCPUClock?>(nil)
        /// Its CPU time just before its flag.
        let before = Atomic<UInt64>(0)

        /// Whether it has used at least `nanoseconds` of CPU time since ``before``; read by R.
        func hasRun(_ nanoseconds: UInt64) -> Bool {
            guard let now = self.clock.value?.nanoseconds else { return false }
            return now >= self.before.load(ordering: .relaxed) + nanoseconds
        }
    }

    /// Not under schedule chaos.
    ///
    /// A chaos point inside the command (a `sched_yield` before the value's lock) spends
    /// CPU time before the command reaches the queue, so G of CPU time no longer proves that H is pending. Under
    /// `CONCURRENCYKIT_CHAOS` seeds 1 and 2 the fixed code "failed" here in 1 to 7 of 100 rounds, never without chaos.
    @Test(
        "a pending wait still watching the turn runs before queued and later lowest-priority waits",
        .enabled(if: ScheduleChaos.seed == nil, "its CPU-time certainty needs a schedule without chaos points")
    )
    func watchingWaitsRunByPriority() async {
        let failures = PropertyFailures()
        await offPool {
            let rounds = PropertyRun.rounds(100)
            let minimumRun = max(1_000, 2 * Self.freeCommandNanoseconds())
            let watching = Self.watchingNanoseconds()
            let value = QueueSafeValue(value: 0)
            let history = PropertyHistory()
            let holding = SpinFlag()
            let lowestQueued = SpinFlag()
            let watcher = Watcher()
            let done = [SpinFlag(), SpinFlag()]
            let counted = AtomicBox([Bool](repeating: false, count: rounds))
            let queuedAtRelease = AtomicBox([0, 0, 0])
            // Ids: 4r hold, 4r+1 highest (H), 4r+2 lowest (L, queued), 4r+3 the releasing thread's next lowest.
            let finished = runOnThreads(3, seconds: 20) { index in
                for round in 1...rounds {
                    switch index {
                    case 0:
                        value.wait.lowestPriority.set { _ in
                            history.record("start", 4 * round, 0)
                            holding.set(round)
                            guard eventually({ value.waitingCommandCount == 1 }) else { return }
                            history.record("issued", 4 * round + 2, 0)
                            lowestQueued.set(round)
                            guard watcher.flag.spin(until: round) else { return }
                            let limit = deadline(1)
                            while !watcher.hasRun(minimumRun) && DispatchTime.now() < limit {}
                            counted.mutate { $0[round - 1] = watcher.hasRun(minimumRun) }
                            queuedAtRelease.mutate { $0[min(2, value.waitingCommandCount)] += 1 }
                            history.record("end", 4 * round, 0)
                        }
                        // No record between the release and the next command: the releasing thread goes straight on.
                        value.wait.lowestPriority.set { _ in
                            history.record("start", 4 * round + 3, 0)
                            history.record("end", 4 * round + 3, 0)
                        }
                        for flag in done { guard flag.spin(until: round) else { return } }
                    case 1:
                        if round == 1 { watcher.clock.mutate { $0 = ThreadCPUClock.current() } }
                        guard lowestQueued.spin(until: round) else { return }
                        history.record("issuing", 4 * round + 1, 1)
                        watcher.before.store(watcher.clock.value?.nanoseconds ?? UInt64.max / 2, ordering: .relaxed)
                        watcher.flag.set(round)
                        value.wait.highestPriority.set { _ in
                            history.record("start", 4 * round + 1, 1)
                            history.record("end", 4 * round + 1, 1)
                        }
                        done[0].set(round)
                    default:
                        guard holding.spin(until: round) else { return }
                        history.record("issuing", 4 * round + 2, 0)
                        value.wait.lowestPriority.set { _ in
                            history.record("start", 4 * round + 2, 0)
                            history.record("end", 4 * round + 2, 0)
                        }
                        done[1].set(round)
                    }
                }
            }
            failures.expect(finished, "\(PropertyRun.failure("every wait command returns (timed out)"))")
            let events = history.events
            var start: [Int: Int] = [:]
            for event in events where event.kind == "start" { start[event.payload] = event.sequence }
            func overtaken(_ round: Int) -> Int? {
                guard let highest = start[4 * round + 1] else { return nil }
                for lowest in [4 * round + 2, 4 * round + 3] where (start[lowest] ?? Int.max) < highest {
                    return lowest
                }
                return nil
            }
            let countedRounds = counted.value
            let checked = countedRounds.filter { $0 }.count
            let violations = (1...rounds).filter { countedRounds[$0 - 1] && overtaken($0) != nil }
            print(
                "watching wait: overtaken in \(violations.count) of \(checked) counted rounds; queued commands at release "
                    + "(0, 1, 2+): \(queuedAtRelease.value); G = \(minimumRun) ns; watching lasts \(watching) ns"
            )
            failures.expect(checked > 0, "no round could be counted: H never got the CPU time")
            if let round = violations.first, let lowest = overtaken(round).flatMap({ start[$0] }),
                let highest = start[4 * round + 1]
            {
                failures.record(
                    (PropertyRun.failure(
                        "a lowest-priority wait overtook a pending highest-priority wait in \(violations.count) of "
                            + "\(checked) counted rounds (G = \(minimumRun) ns)",
                        round: round
                    ) + "\n" + PropertyHistory.excerpt(of: events, around: [lowest, highest]))
                )
            }
        }
        report(failures)
    }
}
