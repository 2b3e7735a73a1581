import ConcurrencyKit
import Dispatch
import Foundation
import TestSupport
import Testing

/// The report's view of one thread's wait, found by the waiting thread's ID.
private func wait(of thread: UInt, in report: WaitReport) -> WaitReport.Wait? {
    report.waits.first { $0.waiter.id == thread }
}

private let thisFile = "ConcurrencyKitTests/WaitReportKindsTests.swift"

@Suite("WaitReport: thread waits of the upper modules", .timeLimit(.minutes(3)))
struct WaitReportKindsTests {
    @Test(
        "a wait command waiting for a value's turn names the value and the thread in its command closure",
        arguments: [false, true]
    )
    func valueTurn(combinable: Bool) throws {
        let value = QueueSafeValue(value: 0)
        let release = DispatchSemaphore(value: 0)
        let inside = DispatchSemaphore(value: 0)
        let threads = DispatchGroup()
        let holder = startReportedThread(in: threads) {
            _ = value.wait.lowestPriority.set { _ in
                inside.signal()
                hold(until: release)
            }
        }
        _ = inside.wait(timeout: deadline())
        let waiter = startReportedThread(in: threads) {
            if combinable {
                _ = value.wait.highestPriority.set(newValue: 1)
            } else {
                _ = value.wait.highestPriority.set { $0 = 1 }
            }
        }
        let report = waitReport { wait(of: waiter, in: $0) != nil }
        release.signal()
        #expect(threads.wait(timeout: deadline()) == .success)
        let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
        #expect(found.call.hasPrefix("value.wait.highestPriority.set"), "\(found)")
        #expect(found.site.hasPrefix(thisFile))
        #expect(found.resource.type == "QueueSafeValue<Int>")
        #expect(found.resource.madeAt?.hasPrefix(thisFile) == true)
        #expect(found.holders.map(\.waiter.id) == [holder], "\(report!)")
        #expect(found.holders.first?.site?.hasPrefix(thisFile) == true, "\(report!)")
        #expect(value.wait.lowestPriority.get() == .success(1))
    }

    @Test("a GCDGroup wait and a Queuer wait name what they wait for")
    func groupAndQueuer() throws {
        let group = GCDGroup()
        group.enter()
        let queuer = Queuer(name: "report.queuer")
        let release = DispatchSemaphore(value: 0)
        queuer.addOperation { hold(until: release) }
        let threads = DispatchGroup()
        let groupWaiter = startReportedThread(in: threads) { _ = group.wait(timeout: .seconds(patienceSeconds)) }
        let queuerWaiter = startReportedThread(in: threads) { queuer.waitUntilAllOperationsAreFinished() }
        let report = waitReport { wait(of: groupWaiter, in: $0) != nil && wait(of: queuerWaiter, in: $0) != nil }
        group.leave()
        release.signal()
        #expect(threads.wait(timeout: deadline()) == .success)
        let found = try #require(report)
        let onGroup = try #require(wait(of: groupWaiter, in: found))
        #expect(onGroup.call == "GCDGroup.wait(timeout:)" && onGroup.resource.type == "GCDGroup")
        #expect(onGroup.site.hasPrefix(thisFile))
        let onQueuer = try #require(wait(of: queuerWaiter, in: found))
        #expect(onQueuer.call == "Queuer.waitUntilAllOperationsAreFinished()")
        #expect(onQueuer.resource.type == "Queuer" && onQueuer.resource.name == "report.queuer")
        // Neither is held by a thread: a stall, not a cycle.
        #expect(onGroup.holders.isEmpty && onQueuer.holders.isEmpty)
    }

    @Test(
        "reports taken while 16 threads hammer one value never name a deadlock, a waiter as its own holder, or a stranger"
    )
    func hammeredValueNeverMisreported() {
        // Waits are picked by where the value was made.
        let line: UInt = #line
        let value = QueueSafeValue(value: 0, line: line)
        let madeAt = "\(thisFile):\(line)"
        // A holder applying combined commands for others runs them without a site of their own.
        let found = hammerWhileReporting(
            minimumRounds: PropertyRun.rounds(2_000),
            file: thisFile,
            holdersMayLackSite: true,
            isHammered: { $0.resource.madeAt == madeAt },
            round: { thread, number in
                // Half at the highest priority, closures and combined commands mixed.
                if thread % 2 == 0 {
                    _ = value.wait.highestPriority.set { $0 += 1 }
                } else if number % 2 == 0 {
                    _ = value.wait.lowestPriority.set { $0 += 1 }
                } else {
                    _ = value.wait.lowestPriority.get()
                }
            }
        )
        #expect(found.finished)
        #expect(found.problems.isEmpty, "\(found.problems.prefix(3))")
        // Even threads write every round, odd threads every even-numbered one.
        let writes = found.rounds.enumerated().reduce(0) { sum, thread in
            sum + (thread.offset % 2 == 0 ? thread.element : (thread.element + 1) / 2)
        }
        #expect(value.wait.lowestPriority.get() == .success(writes))
        #expect(found.seen > 0, "\(found.reports) reports saw no wait")
    }

    @Test("a value's turn and a lock held crosswise are one deadlock of two edges")
    func twoCycleValueAndLock() async {
        // A deadlock that nothing breaks: in a child process, which ends with its threads still parked.
        await #expect(processExitsWith: .success) {
            // The lock-order checker would stop the inversion before it deadlocks (the suites run in trap mode).
            LockOrderChecking.mode = .off
            let value = QueueSafeValue(value: 0)
            let lock = MutexLock(name: "crosswise")
            let bothHold = DispatchSemaphore(value: 0)
            let go = DispatchSemaphore(value: 0)
            let threads = DispatchGroup()
            let first = startReportedThread(in: threads) {
                _ = value.wait.lowestPriority.set { _ in
                    bothHold.signal()
                    _ = go.wait(timeout: deadline())
                    lock.withLock {}
                }
            }
            let second = startReportedThread(in: threads) {
                lock.withLock {
                    bothHold.signal()
                    _ = go.wait(timeout: deadline())
                    _ = value.wait.lowestPriority.get()
                }
            }
            releaseCrosswise(holding: bothHold, go: go)
            guard let cycle = deadlock(among: [first, second]) else { _exit(2) }
            let text = "\(cycle)"
            guard text.contains("MutexLock \"crosswise\""), text.contains("QueueSafeValue<Int>") else { _exit(3) }
            // Without running the exit handlers: two threads stay parked for good.
            _exit(0)
        }
    }
}
