import AtomicPrimitives
import Dispatch
import Foundation
import TestSupport
import Testing

/// The report's view of one thread's wait, found by the waiting thread's ID.
private func wait(of thread: UInt, in report: WaitReport) -> WaitReport.Wait? {
    report.waits.first { $0.waiter.id == thread }
}

private let thisFile = "AtomicPrimitivesTests/WaitReportTests.swift"

@Suite("WaitReport: thread waits of AtomicPrimitives", .timeLimit(.minutes(3)))
struct WaitReportTests {
    @Test("a thread waiting for a MutexLock names the lock, its owner and where the owner took it")
    func mutexLockWait() throws {
        let lock = MutexLock(name: "ledger")
        let release = DispatchSemaphore(value: 0)
        let taken = DispatchSemaphore(value: 0)
        let threads = DispatchGroup()
        let holder = startReportedThread(in: threads) {
            lock.withLock {
                taken.signal()
                hold(until: release)
            }
        }
        _ = taken.wait(timeout: deadline())
        let waiter = startReportedThread(in: threads) {
            lock.lock()
            lock.unlock()
        }
        let report = waitReport { wait(of: waiter, in: $0) != nil }
        release.signal()
        #expect(threads.wait(timeout: deadline()) == .success)
        let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
        #expect(found.call == "MutexLock.lock()")
        #expect(found.site.hasPrefix(thisFile))
        #expect(found.resource.type == "MutexLock" && found.resource.name == "ledger")
        #expect(found.resource.madeAt?.hasPrefix(thisFile) == true)
        #expect(found.holders.map(\.waiter.id) == [holder], "\(report!)")
        #expect(found.holders.first?.site?.hasPrefix(thisFile) == true, "\(report!)")
        #expect(found.duration >= .zero)
        // No cycle through these two threads; other tests of the process may make deadlocks of their own meanwhile
        // (WaitReportCycleTests does), which the report, global to the process, names too.
        let ours: Set = [holder, waiter]
        #expect(report?.deadlocks.allSatisfy { $0.waits.allSatisfy { !ours.contains($0.waiter.id) } } == true)
    }

    @Test("a thread waiting for an AtomicBox names the box and its holder")
    func atomicBoxWait() throws {
        let box = AtomicBox(0, name: "counter")
        let release = DispatchSemaphore(value: 0)
        let taken = DispatchSemaphore(value: 0)
        let threads = DispatchGroup()
        let holder = startReportedThread(in: threads) {
            box.mutate { _ in
                taken.signal()
                hold(until: release)
            }
        }
        _ = taken.wait(timeout: deadline())
        let waiter = startReportedThread(in: threads) { box.mutate { $0 += 1 } }
        let report = waitReport { wait(of: waiter, in: $0) != nil }
        release.signal()
        #expect(threads.wait(timeout: deadline()) == .success)
        let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
        #expect(found.call == "AtomicBox.mutate(_:)")
        #expect(found.resource.type == "AtomicBox<Int>" && found.resource.name == "counter")
        #expect(found.holders.map(\.waiter.id) == [holder])
        #expect(box.value == 1)
    }

    @Test("a thread waiting for a one-resource semaphore names the thread inside perform, and where it entered")
    func semaphoreWaitNamesPerformer() throws {
        let semaphore = CountingSemaphore(.binary, name: "gate")
        let release = DispatchSemaphore(value: 0)
        let inside = DispatchSemaphore(value: 0)
        let threads = DispatchGroup()
        let holder = startReportedThread(in: threads) {
            semaphore.perform {
                inside.signal()
                hold(until: release)
            }
        }
        _ = inside.wait(timeout: deadline())
        let waiter = startReportedThread(in: threads) { semaphore.perform {} }
        let report = waitReport { wait(of: waiter, in: $0) != nil }
        release.signal()
        #expect(threads.wait(timeout: deadline()) == .success)
        let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
        #expect(found.call == "CountingSemaphore.perform(_:)")
        #expect(found.resource.type == "CountingSemaphore" && found.resource.name == "gate")
        #expect(found.resource.madeAt?.hasPrefix(thisFile) == true)
        #expect(found.holders.map(\.waiter.id) == [holder], "\(report!)")
        #expect(found.holders.first?.site?.hasPrefix(thisFile) == true, "\(report!)")
        #expect(found.state == "none free, a line waits")
        // Taken with a bare `wait()`, the resource has no holder to name: a later waiter finds none.
        semaphore.wait()
        let later = DispatchGroup()
        let lonely = startReportedThread(in: later) { _ = semaphore.wait(.seconds(patienceSeconds)) }
        let after = try #require(waitReport { wait(of: lonely, in: $0) != nil }.flatMap { wait(of: lonely, in: $0) })
        semaphore.signal()
        #expect(later.wait(timeout: deadline()) == .success)
        semaphore.signal()
        #expect(after.holders.isEmpty, "\(after)")
    }

    @Test("a semaphore of several resources names no holder: it has none to name")
    func wideSemaphoreNamesNoHolder() throws {
        let semaphore = CountingSemaphore(.counting(2), name: "pool")
        let release = DispatchSemaphore(value: 0)
        let inside = DispatchSemaphore(value: 0)
        let threads = DispatchGroup()
        for _ in 0..<2 {
            _ = startReportedThread(in: threads) {
                semaphore.perform {
                    inside.signal()
                    hold(until: release)
                }
            }
        }
        for _ in 0..<2 { _ = inside.wait(timeout: deadline()) }
        let waiter = startReportedThread(in: threads) { semaphore.perform {} }
        let report = waitReport { wait(of: waiter, in: $0) != nil }
        release.signal()
        release.signal()
        #expect(threads.wait(timeout: deadline()) == .success)
        let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
        #expect(found.holders.isEmpty, "\(found)")
    }

    @Test("a stall without a cycle names the waiter, the semaphore and how long it has waited, and no deadlock")
    func stallWithoutCycle() throws {
        let semaphore = CountingSemaphore(.barrier, name: "never signalled")
        let threads = DispatchGroup()
        let waiter = startReportedThread(in: threads) { _ = semaphore.wait(.seconds(patienceSeconds)) }
        let first = try #require(waitReport { wait(of: waiter, in: $0) != nil })
        // The same wait, looked at again once it has lasted longer: its duration grows, its start does not move.
        let firstWait = try #require(wait(of: waiter, in: first))
        let later = waitReport { report in
            wait(of: waiter, in: report).map { $0.duration > firstWait.duration + .milliseconds(5) } ?? false
        }
        semaphore.signal()
        #expect(threads.wait(timeout: deadline()) == .success)
        let grown = try #require(later.flatMap { wait(of: waiter, in: $0) })
        #expect(grown.call == "CountingSemaphore.wait(_:)")
        #expect(grown.resource.name == "never signalled")
        #expect(grown.holders.isEmpty)
        #expect(!first.deadlocks.contains { $0.waits.contains { $0.waiter.id == waiter } })
        #expect("\(grown)".contains("has waited"))
        // Once it has gone on, the thread's wait is gone from the report.
        #expect(wait(of: waiter, in: WaitReport.current) == nil)
    }

    @Test("a lock and a semaphore held crosswise by two threads are one deadlock of two edges")
    func twoCycleLockAndSemaphore() throws {
        let lock = MutexLock(name: "a")
        let semaphore = CountingSemaphore(.binary, name: "b")
        let bothHold = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let threads = DispatchGroup()
        let first = startReportedThread(in: threads) {
            lock.withLock {
                bothHold.signal()
                hold(until: go)
                // Timed, so that the test can break the cycle: one extra signal lets this thread through.
                if semaphore.wait(.seconds(patienceSeconds)) == .success { semaphore.signal() }
            }
        }
        let second = startReportedThread(in: threads) {
            semaphore.perform {
                bothHold.signal()
                hold(until: go)
                lock.withLock {}
            }
        }
        releaseCrosswise(holding: bothHold, go: go)
        let named = deadlock(among: [first, second])
        semaphore.signal()
        #expect(threads.wait(timeout: deadline()) == .success)
        let cycle = try #require(named, "the two threads were never named in a deadlock")
        #expect(cycle.waits.count == 2)
        let text = "\(cycle)"
        #expect(text.contains("MutexLock \"a\"") && text.contains("CountingSemaphore \"b\""), "\(text)")
    }

    @Test(
        "reports taken while 16 threads hammer one lock never name a deadlock, a waiter as its own holder, or a stranger"
    )
    func hammeredLockNeverMisreported() {
        let lock = MutexLock(name: "hammered")
        let counter = AtomicBox(0)
        let found = hammerWhileReporting(
            minimumRounds: PropertyRun.rounds(3_000),
            file: thisFile,
            isHammered: { $0.resource.name == "hammered" },
            round: { _, _ in lock.withLock { counter.mutate { $0 += 1 } } }
        )
        #expect(found.finished)
        #expect(found.problems.isEmpty, "\(found.problems.prefix(3))")
        #expect(counter.value == found.rounds.reduce(0, +))
        // The hammer did park threads: the reports saw waits to check.
        #expect(found.seen > 0, "\(found.reports) reports saw no wait")
    }
}
