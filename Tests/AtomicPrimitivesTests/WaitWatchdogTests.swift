import AtomicPrimitives
import Dispatch
import Foundation
import TestSupport
import Testing

/// Polls until `condition` holds; exits the child process with `code` if it has not within the patience.
private func awaitOrExit(_ code: Int32, _ condition: () -> Bool) {
    let limit = deadline()
    while !condition() {
        if DispatchTime.now() > limit { exit(code) }
        Thread.sleep(forTimeInterval: 0.001)
    }
}

/// Lets the watchdog look `count` more times.
private func letWatchdogLook(_ count: Int) {
    let target = WaitWatchdog.looks + count
    awaitOrExit(9) { WaitWatchdog.looks >= target }
}

// Each test runs in a child process of its own: the watchdog sees every wait of the process, and the other suites'
// waits would fire it too.
@Suite("WaitWatchdog", .timeLimit(.minutes(3)))
struct WaitWatchdogTests {
    @Test("fires once per stall, however long it lasts, and again for the next stall")
    func oncePerStall() async {
        await #expect(processExitsWith: .success) {
            let fired = AtomicBox<[WaitReport]>([])
            WaitWatchdog.start(after: .milliseconds(50)) { report in fired.mutate { $0.append(report) } }
            for round in 1...2 {
                let stalled = CountingSemaphore(.barrier, name: "stalled \(round)")
                let done = DispatchSemaphore(value: 0)
                onNewThread {
                    _ = stalled.wait(.seconds(patienceSeconds))
                    done.signal()
                }
                awaitOrExit(2) { fired.value.count == round }
                // Long past the threshold, many looks later: still one report for this stall.
                letWatchdogLook(20)
                guard fired.value.count == round else { exit(3) }
                let report = fired.value[round - 1]
                guard report.waits.contains(where: { $0.resource.name == "stalled \(round)" }) else { exit(4) }
                stalled.signal()
                guard done.wait(timeout: deadline()) == .success else { exit(5) }
            }
            WaitWatchdog.stop()
            guard !WaitWatchdog.isRunning else { exit(6) }
        }
    }

    @Test("a deadlock fires at once, long before the threshold, naming the cycle")
    func deadlockAtOnce() async {
        await #expect(processExitsWith: .success) {
            let fired = AtomicBox<[WaitReport]>([])
            WaitWatchdog.start(after: .seconds(3_600)) { report in fired.mutate { $0.append(report) } }
            let lock = MutexLock(name: "first")
            let semaphore = CountingSemaphore(.binary, name: "second")
            let bothHold = DispatchSemaphore(value: 0)
            let go = DispatchSemaphore(value: 0)
            let threads = DispatchGroup()
            threads.enter()
            onNewThread {
                lock.withLock {
                    bothHold.signal()
                    _ = go.wait(timeout: deadline())
                    if semaphore.wait(.seconds(patienceSeconds)) == .success { semaphore.signal() }
                }
                threads.leave()
            }
            threads.enter()
            onNewThread {
                semaphore.perform {
                    bothHold.signal()
                    _ = go.wait(timeout: deadline())
                    lock.withLock {}
                }
                threads.leave()
            }
            releaseCrosswise(holding: bothHold, go: go)
            awaitOrExit(2) { !fired.value.isEmpty }
            guard let deadlock = fired.value.first?.deadlocks.first, deadlock.waits.count == 2 else { exit(3) }
            semaphore.signal()
            guard threads.wait(timeout: deadline()) == .success else { exit(4) }
            letWatchdogLook(5)
            guard fired.value.count == 1 else { exit(5) }
            WaitWatchdog.stop()
        }
    }

    @Test("without a handler it writes the report to standard error")
    func writesToStandardError() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            WaitWatchdog.start(after: .milliseconds(20))
            let stalled = CountingSemaphore(.barrier, name: "written")
            let done = DispatchSemaphore(value: 0)
            onNewThread {
                _ = stalled.wait(.seconds(patienceSeconds))
                done.signal()
            }
            // The report is written before the look ends: a few looks after the wait began, it is out.
            awaitOrExit(2) { WaitReport.current.waits.contains { $0.resource.name == "written" } }
            letWatchdogLook(10)
            stalled.signal()
            _ = done.wait(timeout: deadline())
            WaitWatchdog.stop()
        }
        let errors = text(try #require(result).standardErrorContent)
        #expect(errors.contains("ConcurrencyKit WaitWatchdog: ConcurrencyKit wait report"), "\(errors)")
        #expect(errors.contains("CountingSemaphore \"written\""), "\(errors)")
        #expect(
            errors.contains("CountingSemaphore.wait(_:) at AtomicPrimitivesTests/WaitWatchdogTests.swift"),
            "\(errors)"
        )
    }
}
