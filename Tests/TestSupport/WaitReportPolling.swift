import AtomicPrimitives
import Dispatch
import Foundation

/// Starts `body` on a new thread that enters `group` until `body` returns; returns the thread's ID, as
/// ``WaitReport`` names it, once the thread runs.
public func startReportedThread(in group: DispatchGroup, _ body: @escaping @Sendable () -> Void) -> UInt {
    let id = AtomicBox<UInt>(0)
    let started = DispatchSemaphore(value: 0)
    group.enter()
    Thread.detachNewThread {
        id.mutate { $0 = UInt(pthread_self()) }
        started.signal()
        body()
        group.leave()
    }
    _ = started.wait(timeout: deadline())
    return id.value
}

/// Takes ``WaitReport/current`` until `condition` holds for it; `nil` if it has not within ``patienceSeconds``.
///
/// A wait appears in the report once its thread parks, which the test cannot otherwise observe: this is how a test
/// knows a thread is parked, by the condition it checks, not by time.
public func waitReport(where condition: (WaitReport) -> Bool) -> WaitReport? {
    let limit = deadline()
    while DispatchTime.now() < limit {
        let report = WaitReport.current
        if condition(report) { return report }
        Thread.sleep(forTimeInterval: 0.001)
    }
    return nil
}

/// Lets the threads of a deadlock test reach for their second resource at once: waits until each of `threads` has
/// signalled `holding` (it holds its first), then signals `go` once for each.
public func releaseCrosswise(holding: DispatchSemaphore, go: DispatchSemaphore, threads: Int = 2) {
    for _ in 0..<threads { _ = holding.wait(timeout: deadline()) }
    for _ in 0..<threads { go.signal() }
}

/// Takes reports until one names a deadlock whose waiters are exactly `waiters`; that deadlock, or `nil` if none was
/// named within ``patienceSeconds``.
public func deadlock(among waiters: Set<UInt>) -> WaitReport.Deadlock? {
    let named = { (report: WaitReport) in report.deadlocks.first { Set($0.waits.map(\.waiter.id)) == waiters } }
    return waitReport { named($0) != nil }.flatMap(named)
}
