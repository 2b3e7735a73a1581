import AtomicPrimitives
import Dispatch
import Synchronization

/// What the reports taken during ``hammerWhileReporting(threads:minimumRounds:enough:file:holdersMayLackSite:isHammered:round:)``
/// found.
public struct HammerFindings: Sendable {
    /// Whether every hammer thread ended (within ``patienceSeconds`` of being told to stop).
    public var finished = false
    /// How many rounds each hammer thread ran, by the thread's index.
    public var rounds: [Int] = []
    /// How many waits on the hammered resource the reports listed.
    public var seen = 0
    /// How many reports were taken.
    public var reports = 0
    /// What the reports got wrong, described.
    public var problems: [String] = []
}

/// Hammers one resource from `threads` new threads while this thread takes ``WaitReport/current`` over and over, and
/// checks every wait the reports list on it.
///
/// Each thread runs `round(thread, number)` at least `minimumRounds` times, and on until the reports have listed
/// `enough` waits on the resource or ``stallSeconds`` have passed: on a loaded machine the reporting thread may get
/// few turns while the hammer runs, and a hammer that ended before a report saw a wait would check nothing.
///
/// A listed wait is a problem when its waiter is not a hammer thread, when a holder is the waiter itself or not a
/// hammer thread, or when a holder's site is not in `file` (or is missing, unless `holdersMayLackSite`). A report
/// naming a deadlock through the resource is a problem. Waits are picked by `isHammered`, by the resource rather
/// than by the thread: a finished hammer thread may leave its ID to a thread of another test.
public func hammerWhileReporting(
    threads count: Int = 16,
    minimumRounds: Int,
    enough: Int = 50,
    file: String,
    holdersMayLackSite: Bool = false,
    isHammered: (WaitReport.Wait) -> Bool,
    round: @escaping @Sendable (_ thread: Int, _ number: Int) -> Void
) -> HammerFindings {
    let stop = Atomic<Bool>(false)
    let rounds = AtomicBox([Int](repeating: 0, count: count))
    let threads = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    let ids = (0..<count).map { thread in
        startReportedThread(in: threads) {
            _ = start.wait(timeout: deadline())
            var number = 0
            while number < minimumRounds || !stop.load(ordering: .relaxed) {
                round(thread, number)
                number += 1
            }
            rounds.mutate { $0[thread] = number }
        }
    }
    let hammer = Set(ids)
    for _ in 0..<count { start.signal() }
    var findings = HammerFindings()
    let giveUp = DispatchTime.now() + .seconds(stallSeconds)
    let hung = giveUp + .seconds(patienceSeconds)
    while threads.wait(timeout: .now()) == .timedOut && DispatchTime.now() < hung {
        if findings.seen >= enough || DispatchTime.now() >= giveUp { stop.store(true, ordering: .relaxed) }
        let report = WaitReport.current
        findings.reports += 1
        for wait in report.waits where isHammered(wait) {
            findings.seen += 1
            if !hammer.contains(wait.waiter.id) { findings.problems.append("a stranger waits: \(wait)") }
            for holder in wait.holders
            where holder.waiter == wait.waiter || !hammer.contains(holder.waiter.id)
                || !(holder.site.map { $0.hasPrefix(file) } ?? holdersMayLackSite)
            {
                findings.problems.append("wrong holder: \(wait)")
            }
        }
        if report.deadlocks.contains(where: { $0.waits.contains(where: isHammered) }) {
            findings.problems.append("a deadlock named: \(report)")
        }
    }
    findings.finished = threads.wait(timeout: .now()) == .success
    findings.rounds = rounds.value
    return findings
}
