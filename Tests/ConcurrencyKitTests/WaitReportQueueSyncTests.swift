import ConcurrencyKit
import Dispatch
import Foundation
import TestSupport
import Testing

/// The report's view of one thread's wait, found by the waiting thread's ID.
private func wait(of thread: UInt, in report: WaitReport) -> WaitReport.Wait? {
    report.waits.first { $0.waiter.id == thread }
}

private let thisFile = "ConcurrencyKitTests/WaitReportQueueSyncTests.swift"

/// Runs `body` with `GCDQueue.sync` recording its waits, as the app asks, and puts the setting back after.
private func recordingSyncs<Result>(_ body: () throws -> Result) rethrows -> Result {
    // First, as the suites' watchdog sets the switch when it starts (off, under CONCURRENCYKIT_RECORD_SYNCS=0).
    _ = suiteWatchdog
    let before = WaitReport.recordsQueueSyncs
    WaitReport.recordsQueueSyncs = true
    defer { WaitReport.recordsQueueSyncs = before }
    return try body()
}

// Serialized: the tests set and put back one process-wide setting.
@Suite("WaitReport: GCDQueue.sync, recorded on request", .serialized, .timeLimit(.minutes(3)))
struct WaitReportQueueSyncTests {
    @Test("a sync onto a serial queue held by another sync names the queue, and the thread in that sync's block")
    func serialQueueHeldBySync() throws {
        try recordingSyncs {
            let line: UInt = #line
            let queue = GCDQueue(name: "report.serial", line: line)
            let release = DispatchSemaphore(value: 0)
            let inside = DispatchSemaphore(value: 0)
            let threads = DispatchGroup()
            let holder = startReportedThread(in: threads) {
                queue.sync {
                    inside.signal()
                    hold(until: release)
                }
            }
            _ = inside.wait(timeout: deadline())
            let waiter = startReportedThread(in: threads) { queue.sync {} }
            let report = waitReport { wait(of: waiter, in: $0) != nil }
            release.signal()
            #expect(threads.wait(timeout: deadline()) == .success)
            let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
            #expect(found.call == "GCDQueue.sync(_:)")
            #expect(found.site.hasPrefix(thisFile))
            #expect(found.resource.type == "GCDQueue" && found.resource.name == "report.serial")
            #expect(found.resource.madeAt == "\(thisFile):\(line)")
            #expect(found.holders.map(\.waiter.id) == [holder], "\(report!)")
            #expect(found.holders.first?.site?.hasPrefix(thisFile) == true, "\(report!)")
            // Once both syncs have returned, nothing waits on the queue. (By the queue, not the thread: a new thread
            // of another test may have the waiter's ID by now.)
            #expect(!WaitReport.current.waits.contains { $0.resource.name == "report.serial" })
        }
    }

    @Test("a sync onto a serial queue held by a block sent with async names the thread running that block")
    func serialQueueHeldByAsyncBlock() throws {
        try recordingSyncs {
            let queue = GCDQueue(name: "report.async")
            let release = DispatchSemaphore(value: 0)
            let inside = DispatchSemaphore(value: 0)
            let holder = AtomicBox<UInt>(0)
            queue.async {
                holder.mutate { $0 = UInt(pthread_self()) }
                inside.signal()
                hold(until: release)
            }
            _ = inside.wait(timeout: deadline())
            let threads = DispatchGroup()
            let waiter = startReportedThread(in: threads) { queue.sync {} }
            let report = waitReport { wait(of: waiter, in: $0) != nil }
            release.signal()
            #expect(threads.wait(timeout: deadline()) == .success)
            let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
            #expect(found.holders.map(\.waiter.id) == [holder.value], "\(report!)")
            // Sent with `async`, which takes no call site.
            #expect(found.holders.first?.site == nil)
        }
    }

    @Test(
        "a group's notifications, a block and a task, hold a serial queue as its async blocks do",
        arguments: [false, true]
    )
    func serialQueueHeldByNotification(asTask: Bool) throws {
        try recordingSyncs {
            let queue = GCDQueue(name: "report.notify")
            let release = DispatchSemaphore(value: 0)
            let inside = DispatchSemaphore(value: 0)
            let holder = AtomicBox<UInt>(0)
            let body: @Sendable () -> Void = {
                holder.mutate { $0 = UInt(pthread_self()) }
                inside.signal()
                hold(until: release)
            }
            // A task's notification runs on the task's queue, which holds it, not on the group's.
            let group = GCDGroup(queue: asTask ? GCDQueue(name: "report.notify.group") : queue)
            if asTask { group.notify(GCDTask(queue: queue, body)) } else { group.notify(body) }
            _ = inside.wait(timeout: deadline())
            let threads = DispatchGroup()
            let waiter = startReportedThread(in: threads) { queue.sync {} }
            let report = waitReport { wait(of: waiter, in: $0) != nil }
            release.signal()
            #expect(threads.wait(timeout: deadline()) == .success)
            let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
            #expect(found.holders.map(\.waiter.id) == [holder.value], "\(report!)")
        }
    }

    @Test("a barrierSync onto a concurrent queue held by another barrier names the barrier's thread; syncs do not hold")
    func concurrentQueueHeldByBarrier() throws {
        try recordingSyncs {
            let queue = GCDQueue(name: "report.concurrent", kind: .concurrent)
            let release = DispatchSemaphore(value: 0)
            let inside = DispatchSemaphore(value: 0)
            let threads = DispatchGroup()
            // A plain sync runs beside others: its thread holds nothing the report names.
            _ = startReportedThread(in: threads) {
                queue.sync {
                    inside.signal()
                    hold(until: release)
                }
            }
            _ = inside.wait(timeout: deadline())
            let holder = startReportedThread(in: threads) {
                queue.barrierSync {
                    inside.signal()
                    hold(until: release)
                }
            }
            let barrierWaits = waitReport { wait(of: holder, in: $0) != nil }
            // The barrier waits for the reader, whom the report does not name.
            let onReader = try #require(barrierWaits.flatMap { wait(of: holder, in: $0) })
            #expect(onReader.call == "GCDQueue.barrierSync(_:)" && onReader.holders.isEmpty, "\(onReader)")
            release.signal()
            _ = inside.wait(timeout: deadline())
            let waiter = startReportedThread(in: threads) { queue.barrierSync {} }
            let report = waitReport { wait(of: waiter, in: $0) != nil }
            release.signal()
            #expect(threads.wait(timeout: deadline()) == .success)
            let found = try #require(report.flatMap { wait(of: waiter, in: $0) })
            #expect(found.call == "GCDQueue.barrierSync(_:)")
            #expect(found.holders.map(\.waiter.id) == [holder], "\(report!)")
        }
    }

    @Test("a sync onto main ends its wait when the block starts, though the caller still waits for the block")
    func mainQueueEndsTheWaitOnMain() throws {
        try recordingSyncs {
            let release = DispatchSemaphore(value: 0)
            let inside = DispatchSemaphore(value: 0)
            let threads = DispatchGroup()
            let onMain = AtomicBox<UInt>(0)
            GCDQueue.main.async {
                onMain.mutate { $0 = UInt(pthread_self()) }
                inside.signal()
                hold(until: release)
            }
            _ = inside.wait(timeout: deadline())
            let waiter = startReportedThread(in: threads) {
                GCDQueue.main.sync {
                    inside.signal()
                    hold(until: release)
                }
            }
            let waiting = waitReport { wait(of: waiter, in: $0) != nil }
            let found = try #require(waiting.flatMap { wait(of: waiter, in: $0) })
            #expect(found.resource.type == "GCDQueue" && found.call == "GCDQueue.sync(_:)")
            // Held by the block sent with async, on the thread that drains main.
            #expect(found.holders.map(\.waiter.id) == [onMain.value], "\(found)")
            release.signal()
            _ = inside.wait(timeout: deadline())
            // The block runs on the thread that drains main now; the caller still waits in `sync`, but not for the queue.
            let during = WaitReport.current
            release.signal()
            #expect(threads.wait(timeout: deadline()) == .success)
            #expect(wait(of: waiter, in: during) == nil, "\(during)")
        }
    }

    @Test("off, a sync records nothing, also while a watchdog runs; on, it records; off again, it stops")
    func offUnlessAskedOrWatched() async {
        // In a child process: the suites record syncs in this one.
        await #expect(processExitsWith: .success) {
            _ = suiteWatchdog
            WaitReport.recordsQueueSyncs = false
            guard WaitWatchdog.isRunning else { _exit(2) }
            let queue = GCDQueue(name: "report.off")
            let release = DispatchSemaphore(value: 0)
            let inside = DispatchSemaphore(value: 0)
            /// Whether a sync onto `queue` held by another shows in a report within `seconds`.
            func syncShows(within seconds: Double) -> Bool {
                let threads = DispatchGroup()
                _ = startReportedThread(in: threads) {
                    queue.sync {
                        inside.signal()
                        hold(until: release)
                    }
                }
                _ = inside.wait(timeout: deadline())
                let waiter = startReportedThread(in: threads) { queue.sync {} }
                let limit = Date(timeIntervalSinceNow: seconds)
                var shows = false
                while !shows && Date() < limit { shows = wait(of: waiter, in: WaitReport.current) != nil }
                release.signal()
                return threads.wait(timeout: deadline()) == .success && shows
            }
            // A wait that must not show: a short limit, which a slow machine can only make check less.
            guard !syncShows(within: 0.2) else { _exit(3) }
            WaitReport.recordsQueueSyncs = true
            guard syncShows(within: Double(patienceSeconds)) else { _exit(4) }
            WaitReport.recordsQueueSyncs = false
            guard !syncShows(within: 0.2) else { _exit(5) }
            _exit(0)
        }
    }

    @Test("main.sync from a queue's block while a block on main syncs onto that queue is one deadlock of two edges")
    func twoCycleMainAndQueue() async {
        // A deadlock that nothing breaks: in a child process, which ends with its threads still parked.
        await #expect(processExitsWith: .success) {
            LockOrderChecking.mode = .off
            _ = suiteWatchdog
            WaitReport.recordsQueueSyncs = true
            let queue = GCDQueue(name: "crosswise.serial")
            let bothHold = DispatchSemaphore(value: 0)
            let go = DispatchSemaphore(value: 0)
            let onMain = AtomicBox<UInt>(0)
            GCDQueue.main.async {
                onMain.mutate { $0 = UInt(pthread_self()) }
                bothHold.signal()
                _ = go.wait(timeout: deadline())
                queue.sync {}
            }
            let threads = DispatchGroup()
            let first = startReportedThread(in: threads) {
                queue.sync {
                    bothHold.signal()
                    _ = go.wait(timeout: deadline())
                    GCDQueue.main.sync {}
                }
            }
            releaseCrosswise(holding: bothHold, go: go)
            guard let cycle = deadlock(among: [first, onMain.value]) else { _exit(2) }
            guard "\(cycle)".contains("GCDQueue \"crosswise.serial\"") else { _exit(3) }
            _exit(0)
        }
    }

    @Test("a lock and a serial queue held crosswise through sync are one deadlock of two edges")
    func twoCycleLockAndQueue() async {
        // A deadlock that nothing breaks: in a child process, which ends with its threads still parked.
        await #expect(processExitsWith: .success) {
            // The lock-order checker would stop the inversion before it deadlocks (the suites run in trap mode).
            LockOrderChecking.mode = .off
            _ = suiteWatchdog
            WaitReport.recordsQueueSyncs = true
            let queue = GCDQueue(name: "crosswise.queue")
            let lock = MutexLock(name: "crosswise.lock")
            let bothHold = DispatchSemaphore(value: 0)
            let go = DispatchSemaphore(value: 0)
            let threads = DispatchGroup()
            let first = startReportedThread(in: threads) {
                queue.sync {
                    bothHold.signal()
                    _ = go.wait(timeout: deadline())
                    lock.withLock {}
                }
            }
            let second = startReportedThread(in: threads) {
                lock.withLock {
                    bothHold.signal()
                    _ = go.wait(timeout: deadline())
                    queue.sync {}
                }
            }
            releaseCrosswise(holding: bothHold, go: go)
            guard let cycle = deadlock(among: [first, second]) else { _exit(2) }
            let text = "\(cycle)"
            guard text.contains("MutexLock \"crosswise.lock\""), text.contains("GCDQueue \"crosswise.queue\"") else {
                _exit(3)
            }
            // Without running the exit handlers: two threads stay parked for good.
            _exit(0)
        }
    }
}
