import AtomicPrimitives
import Dispatch
import Foundation
import SafeValueCore
import Synchronization
import TestSupport
import Testing

/// QueueSafeValue: a `wait` command that is pending but not yet queued (it watches the turn for a moment first) is
/// pending all the same: "every pending highest-priority command runs before any pending lowest-priority one". The
/// usual culprit is the thread that has just released the value and issues its next lowest-priority command.
///
/// Knowing that the highest-priority `wait` is pending, without the value's queue count (a watcher is not counted):
/// - thread R holds the value in a `wait` command closure; thread H, once R holds it, publishes "issuing" (an atomic
///   store, no system call) and at once calls `wait.highestPriority.set`;
/// - R sees the flag and keeps the value a further D, then returns (releasing it) and at once issues
///   `wait.lowestPriority.set`.
/// H has entered the call before R releases if the few instructions between H's flag and the library's first look
/// at the turn take less than D. They do unless H loses its CPU in between, so:
/// - D is at least twice the slowest of 200 whole `wait` commands on a free value, measured first (the path from the
///   flag into the library is a prefix of that);
/// - a round counts only if H was never preempted from before its flag until its command returned
///   (`nonvoluntary_ctxt_switches` unchanged); rounds that do not count are reported, not checked.
/// Keeping D short (a few microseconds) leaves H watching, not queued, at the release in many rounds.
@Suite("Contract properties: a watching wait is pending", .serialized, .timeLimit(.minutes(1)))
struct WatchingWaitPropertyTests {
    /// The slowest of `samples` whole `wait.set` commands on a free value, in nanoseconds.
    static func slowestFreeCommand(samples: Int = 200) -> UInt64 {
        let value = QueueSafeValue(value: 0)
        var slowest: UInt64 = 0
        for _ in 0..<samples {
            let begin = DispatchTime.now().uptimeNanoseconds
            value.wait.highestPriority.set { $0 += 1 }
            slowest = max(slowest, DispatchTime.now().uptimeNanoseconds - begin)
        }
        return slowest
    }

    static func spin(nanoseconds: UInt64) {
        let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
        while DispatchTime.now().uptimeNanoseconds < end {}
    }

    @Test("the releasing thread's next lowest-priority wait never overtakes a pending highest-priority wait")
    func releasingThreadDoesNotOvertake() {
        let rounds = PropertyRun.rounds(400)
        var random = PropertyRun.random(4)
        let minimumHold = max(1_000, 2 * Self.slowestFreeCommand())
        let holds = (0..<rounds).map { _ in minimumHold + UInt64.random(in: 0...20_000, using: &random) }
        let value = QueueSafeValue(value: 0)
        let history = PropertyHistory()
        let holding = SpinFlag()
        let issuing = SpinFlag()
        let roundDone = SpinFlag()
        let counted = AtomicBox([Bool](repeating: false, count: rounds))
        let finished = runOnThreads(2, seconds: 20) { index in
            for round in 1...rounds {
                let hold = 3 * round
                let highest = 3 * round + 1
                let lowest = 3 * round + 2
                if index == 0 {
                    // R: holds, lets go D after H's flag, and issues its next lowest-priority command at once.
                    history.record("issuing", hold, 0)
                    value.wait.lowestPriority.set { count in
                        history.record("start", hold, 0)
                        holding.set(round)
                        guard issuing.spin(until: round) else { return }
                        Self.spin(nanoseconds: holds[round - 1])
                        history.record("end", hold, 0)
                    }
                    history.record("issuing", lowest, 0)
                    value.wait.lowestPriority.set { _ in
                        history.record("start", lowest, 0)
                        history.record("end", lowest, 0)
                    }
                    guard roundDone.spin(until: round) else { return }
                } else {
                    guard holding.spin(until: round) else { return }
                    let before = involuntarySwitches()
                    history.record("issuing", highest, 1)
                    issuing.set(round)
                    value.wait.highestPriority.set { _ in
                        history.record("start", highest, 1)
                        history.record("end", highest, 1)
                    }
                    let after = involuntarySwitches()
                    counted.mutate { $0[round - 1] = before != nil && before == after }
                    roundDone.set(round)
                }
            }
        }
        #expect(finished, "\(PropertyRun.failure("every wait command returns (timed out)"))")
        let events = history.events
        var start: [Int: Int] = [:]
        for event in events where event.kind == "start" { start[event.payload] = event.sequence }
        let countedRounds = counted.value
        var overtaken: [Int] = []
        for round in 1...rounds where countedRounds[round - 1] {
            if let highest = start[3 * round + 1], let lowest = start[3 * round + 2], lowest < highest {
                overtaken.append(round)
            }
        }
        let checked = countedRounds.filter { $0 }.count
        #expect(checked > 0, "no round could be counted: H was preempted in every one")
        if let round = overtaken.first, let lowest = start[3 * round + 2], let highest = start[3 * round + 1] {
            Issue.record(
                Comment(
                    rawValue: PropertyRun.failure(
                        "the releasing thread's lowest-priority wait overtook a pending highest-priority wait in "
                            + "\(overtaken.count) of \(checked) counted rounds (D ≥ \(minimumHold) ns)",
                        round: round
                    ) + "\n" + PropertyHistory.excerpt(of: events, around: [lowest, highest])
                )
            )
        }
    }
}
