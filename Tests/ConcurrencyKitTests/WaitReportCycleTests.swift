import ConcurrencyKit
import Dispatch
import Foundation
import TestSupport
import Testing

/// The three-way deadlock of the guide.
///
/// A lock, a value's turn and a semaphore, each held by one thread that waits for the next. The semaphore's wait has a deadline, so that the test can break the cycle after it looked (one extra
/// signal lets the third thread through), and a failing test does not leave threads stuck.
final class ThreeWayDeadlock: @unchecked Sendable {
    let ledger = MutexLock(name: "ledger")
    let balance = QueueSafeValue(value: 0)
    let gate = CountingSemaphore(.binary, name: "gate")
    /// Each thread's part of the cycle has taken its first resource.
    let holding = DispatchSemaphore(value: 0)
    /// Every thread has returned.
    let finished = DispatchGroup()
    /// The threads' IDs, as the report gives them: the ledger's holder, the balance's, the gate's.
    let threads = AtomicBox<[Int: UInt]>([:])

    /// Starts the three threads; returns once each holds its first resource and has started for its second.
    func start() {
        let allHold = DispatchSemaphore(value: 0)
        self.run(0) {
            self.ledger.withLock {
                self.holding.signal()
                allHold.wait()
                _ = self.balance.wait.lowestPriority.set { $0 += 1 }
            }
        }
        self.run(1) {
            _ = self.balance.wait.lowestPriority.set { value in
                self.holding.signal()
                allHold.wait()
                if self.gate.wait(.seconds(patienceSeconds)) == .success { self.gate.signal() }
                value += 1
            }
        }
        self.run(2) {
            self.gate.perform {
                self.holding.signal()
                allHold.wait()
                self.ledger.withLock {}
            }
        }
        for _ in 0..<3 { _ = self.holding.wait(timeout: deadline()) }
        for _ in 0..<3 { allHold.signal() }
    }

    private func run(_ index: Int, _ body: @escaping @Sendable () -> Void) {
        self.finished.enter()
        Thread.detachNewThread {
            self.threads.mutate { $0[index] = UInt(pthread_self()) }
            body()
            self.finished.leave()
        }
    }

    /// The report, once all three threads wait in it.
    func reportOnceStuck() -> WaitReport? {
        let limit = deadline()
        while DispatchTime.now() < limit {
            let report = WaitReport.current
            let ours = Set(self.threads.value.values)
            let waiting = report.waits.filter { ours.contains($0.waiter.id) }
            if waiting.count == 3 && !report.deadlocks.isEmpty { return report }
            Thread.sleep(forTimeInterval: 0.002)
        }
        return nil
    }

    /// Breaks the cycle: a second resource for the gate lets the value's holder through.
    func breakCycle() -> Bool {
        self.gate.signal()
        return self.finished.wait(timeout: deadline()) == .success
    }
}

@Suite("WaitReport: cycles across kinds", .serialized, .timeLimit(.minutes(3)))
struct WaitReportCycleTests {
    @Test("a lock, a value's turn and a semaphore waiting on each other are named as one deadlock, edge by edge")
    func threeWayCycle() throws {
        let scene = ThreeWayDeadlock()
        scene.start()
        let report = scene.reportOnceStuck()
        #expect(scene.breakCycle())
        let found = try #require(report, "the three threads never all showed as waiting in a cycle")
        let cycle = try #require(found.deadlocks.first { $0.waits.count == 3 }, "\(found)")
        let threads = scene.threads.value
        let byThread = Dictionary(uniqueKeysWithValues: cycle.waits.map { ($0.waiter.id, $0) })
        let ledger = try #require(byThread[threads[0] ?? 0], "\(found)")
        let balance = try #require(byThread[threads[1] ?? 0], "\(found)")
        let gate = try #require(byThread[threads[2] ?? 0], "\(found)")
        #expect(ledger.resource.type == "QueueSafeValue<Int>", "\(found)")
        #expect(ledger.holders.map(\.waiter) == [balance.waiter], "\(found)")
        #expect(balance.resource.type == "CountingSemaphore" && balance.resource.name == "gate", "\(found)")
        #expect(balance.holders.map(\.waiter) == [gate.waiter], "\(found)")
        #expect(gate.resource.type == "MutexLock" && gate.resource.name == "ledger", "\(found)")
        #expect(gate.holders.map(\.waiter) == [ledger.waiter], "\(found)")
        for wait in cycle.waits {
            #expect(wait.site.hasPrefix("ConcurrencyKitTests/WaitReportCycleTests.swift:"), "\(found)")
            #expect(
                wait.holders.allSatisfy {
                    $0.site?.hasPrefix("ConcurrencyKitTests/WaitReportCycleTests.swift:") == true
                },
                "\(found)"
            )
        }
    }
}
