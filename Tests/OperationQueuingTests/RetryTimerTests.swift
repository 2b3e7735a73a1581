import ConcurrencyKitTesting
import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

/// The waits between retries: each ends at once when cancelled, timer and all, on the standard clocks and on others.
@Suite("RetryTimer", .timeLimit(.minutes(1)))
struct RetryTimerTests {
    @Test("a wait fires once its delay has passed on the continuous clock, on the given queue, outside any task")
    func firesOnTheContinuousClock() async {
        let fired = CountingSemaphore()
        let inTask = AtomicBox<Bool?>(nil)
        let timer = RetryTimer(after: .milliseconds(1), on: ContinuousClock(), queue: .global()) {
            inTask.mutate { $0 = withUnsafeCurrentTask { $0 != nil } }
            fired.signal()
        }
        #expect(await fired.wait(timeout: patienceLimit))
        #expect(inTask.value == false)
        timer.cancel()
    }

    @Test("a cancelled wait never fires, and leaves nothing asleep on a test clock")
    func cancelledNeverFires() async throws {
        let clock = TestClock()
        let fired = AtomicBox(0)
        let onTestClock = RetryTimer(after: .seconds(5), on: clock, queue: .global()) { fired.mutate { $0 += 1 } }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        onTestClock.cancel()
        #expect(await suspendUntil { clock.deadlines.isEmpty })
        clock.advance(by: .seconds(5))
        // On the continuous clock, a Dispatch timer: cancelled after its deadline has passed but before its queue
        // could run it, it still never fires. (Cancelled on a running queue, a 1 ms wait on a busy machine may fire
        // first, as the contract allows: fire runs unless the cancel comes before it starts.)
        let held = DispatchQueue(label: "test.retry-timer.held")
        held.suspend()
        let continuous = RetryTimer(after: .milliseconds(1), on: ContinuousClock(), queue: held) {
            fired.mutate { $0 += 1 }
        }
        let deadlinePassed = CountingSemaphore()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { deadlinePassed.signal() }
        #expect(await deadlinePassed.wait(timeout: patienceLimit))
        continuous.cancel()
        held.resume()
        let flushed = CountingSemaphore()
        held.async { flushed.signal() }
        #expect(await flushed.wait(timeout: patienceLimit))
        #expect(fired.value == 0)
    }

    @Test("a sleep ends at its deadline, or throws CancellationError at once when its task is cancelled")
    func sleepEndsOrThrows() async throws {
        try await RetryTimer.sleep(for: .milliseconds(1), on: ContinuousClock())
        let sleeper = Task { try await RetryTimer.sleep(for: .seconds(3_600), on: SuspendingClock()) }
        sleeper.cancel()
        let sleeperEnded = await completes { await #expect(throws: CancellationError.self) { try await sleeper.value } }
        #expect(sleeperEnded)
        let early = Task {
            _ = await suspendUntil { Task.isCancelled }
            try await RetryTimer.sleep(for: .seconds(3_600), on: ContinuousClock())
        }
        early.cancel()
        let earlyEnded = await completes { await #expect(throws: CancellationError.self) { try await early.value } }
        #expect(earlyEnded)
    }

    @Test(
        "resident memory stays flat over many one-hour waits cancelled long before their deadline",
        .enabled(if: !runningUnderSanitizer, "a sanitizer's quarantine holds freed memory back"),
        .enabled(if: !underScheduleChaos, "under chaos its rounds take long enough to starve the suites beside it")
    )
    func memoryStaysFlat() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            // A RetryTimer, cancelled; and a sleep that `Task.immediate` runs up to its suspension before it returns,
            // so that every cancel finds the task asleep with its timer armed.
            func round(sleeping: Bool) async {
                if sleeping {
                    let task = Task.immediate {
                        try await RetryTimer.sleep(for: .seconds(3_600), on: ContinuousClock())
                    }
                    task.cancel()
                    guard case .failure = await task.result else { exit(1) }
                } else {
                    RetryTimer(after: .seconds(3_600), on: ContinuousClock(), queue: .global()) { exit(2) }.cancel()
                }
            }
            for sleeping in [false, true] {
                for _ in 0..<2_000 { await round(sleeping: sleeping) }
                let before = residentBytes()
                let rounds = 20_000
                for _ in 0..<rounds { await round(sleeping: sleeping) }
                let grown = residentBytes() - before
                print(
                    "resident memory grew by \(grown >> 10) KiB over \(rounds) cancelled \(sleeping ? "sleeps" : "timers")"
                )
                // About 700 bytes a round when each wait outlives its cancel, as a cancelled Task.sleep does: some
                // 13 MiB here.
                if grown > 4 << 20 { exit(3) }
            }
        }
        print(text(result?.standardOutputContent), terminator: "")
    }
}

/// Whether schedule chaos is on in this process (and so in the processes of its exit tests).
private let underScheduleChaos = ProcessInfo.processInfo.environment["CONCURRENCYKIT_CHAOS"] != nil

@Suite("RetryTimer on a test clock", .timeLimit(.minutes(1)))
struct RetryTimerDeadlineTests {
    @Test("the wait is measured from when it was made, not from when its task starts: time moved first counts")
    func measuredFromTheFailure() async throws {
        for _ in 0..<20 {
            let clock = TestClock()
            let fired = CountingSemaphore()
            let timer = RetryTimer(after: .seconds(10), on: clock, queue: .global()) { fired.signal() }
            clock.advance(by: .seconds(4))  // most likely before the timer's task has reached the clock
            try await clock.waitForSleepers(1)
            #expect(clock.deadlines == [TestClock.Instant(offset: .seconds(10))])
            clock.advance(by: .seconds(6))
            #expect(await fired.wait(timeout: .seconds(40)))  // a bound, not a proof: the fire is an event
            timer.cancel()
        }
    }

    @Test("time moved past the deadline before the task starts fires it without moving the clock again")
    func deadlinePassedBeforeTheTaskStarts() async {
        let clock = TestClock()
        let fired = CountingSemaphore()
        let timer = RetryTimer(after: .seconds(10), on: clock, queue: .global()) { fired.signal() }
        clock.advance(by: .seconds(12))
        #expect(await fired.wait(timeout: .seconds(40)))  // a bound, not a proof: the fire is an event
        timer.cancel()
    }
}
