import AtomicPrimitives
import ConcurrencyKitTesting
import Foundation
import TestSupport
import Testing

/// `wait(timeout:clock:)` on a clock the test moves: the deadline is the clock's, and nothing sleeps in real time.
@Suite("CountingSemaphore timed waits on a test clock", .timeLimit(.minutes(1)))
struct CountingSemaphoreClockTests {
    @Test("a timed wait times out exactly when the clock reaches its deadline, not a nanosecond before")
    func timesOutAtTheDeadline() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore()
        let waiter = Task { await semaphore.wait(timeout: .seconds(30), clock: clock) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        // A deadline's sleeper may start before its waiter takes its place in the line: wait for both.
        #expect(await suspendUntil { semaphore.waiterCount == 1 })
        clock.advance(by: .seconds(30) - .nanoseconds(1))
        #expect(clock.deadlines.count == 1, "the deadline's sleeper still sleeps")
        #expect(semaphore.waiterCount == 1, "and the waiter still waits")
        clock.advance(by: .nanoseconds(1))
        let waiterReturned = await completes { #expect(await waiter.value == false) }
        #expect(waiterReturned)
        #expect(semaphore.waiterCount == 0)
        #expect(semaphore.signal() == 0, "nobody waits: the signal adds a resource")
    }

    @Test("run(_:) drives a timed wait to its deadline: it times out at exactly 30 s of clock time")
    func runDrivesTheWait() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore()
        let granted = try await clock.run(timeout: patienceLimit) {
            await semaphore.wait(timeout: .seconds(30), clock: clock)
        }
        #expect(granted == false)
        #expect(clock.now.offset == .seconds(30))
    }

    @Test("a timed wait granted before its deadline has its sleeper taken off the clock by the granting signal")
    func grantRemovesTheSleeper() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore()
        let waiter = Task { await semaphore.wait(timeout: .seconds(3_600), clock: clock) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        // The sleeper starts before the waiter joins the line: a signal in between would find nobody to hand to.
        #expect(await suspendUntil { semaphore.waiterCount == 1 })
        #expect(semaphore.signal() == 1)
        // Taken off by the signal itself, before the waiting task resumes: `run()` must not move the time to it.
        #expect(clock.deadlines.isEmpty, "the granting signal takes the sleeper off the clock")
        let waiterReturned = await completes { #expect(await waiter.value == true) }
        #expect(waiterReturned)
        #expect(clock.deadlines.isEmpty, "no timer outlives a granted wait")
        try await clock.run(timeout: patienceLimit)  // idle at once: nothing sleeps, nothing is in flight
        #expect(clock.now.offset == .zero)
    }

    @Test("a timed wait whose task is cancelled returns false and takes its sleeper off the clock at once")
    func cancelRemovesTheSleeper() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore()
        let waiter = Task { await semaphore.wait(timeout: .seconds(3_600), clock: clock) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        waiter.cancel()
        #expect(clock.deadlines.isEmpty, "taken off from inside cancel()")
        let waiterReturned = await completes { #expect(await waiter.value == false) }
        #expect(waiterReturned)
        #expect(semaphore.waiterCount == 0)
        #expect(semaphore.signal() == 0)
    }

    @Test(
        "a cancellation that lands while the timed wait is still on its way to the line takes its sleeper off at once"
    )
    func cancelOnTheWayRemovesTheSleeper() async throws {
        // The wait's sleeper can reach the clock before the waiting task has reached its cancellation handler: a
        // `cancel()` in that moment must still take the sleeper off before it returns. Rounds, since the moment is
        // short (ThreadSanitizer's slower runs found it; there a round takes some 20 times longer, and fewer do).
        let rounds = runningUnderSanitizer ? 1_000 : 5_000
        var late = 0
        for _ in 0..<rounds {
            let clock = TestClock()
            let semaphore = CountingSemaphore()
            let waiter = Task { await semaphore.wait(timeout: .seconds(3_600), clock: clock) }
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            waiter.cancel()
            if !clock.deadlines.isEmpty { late += 1 }
            let waiterReturned = await completes { #expect(await waiter.value == false) }
            #expect(waiterReturned)
            #expect(clock.deadlines.isEmpty)
        }
        #expect(late == 0, "\(late) of \(rounds) cancellations returned with the sleeper still on the clock")
    }

    @Test("a timed wait on a test clock works from the main actor as from nonisolated code")
    @MainActor
    func fromTheMainActor() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore()
        let waiter = Task { @MainActor in await semaphore.wait(timeout: .seconds(2), clock: clock) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        semaphore.signal()
        let waiterReturned = await completes { #expect(await waiter.value == true) }
        #expect(waiterReturned)
        #expect(
            try await clock.run(timeout: patienceLimit) { await semaphore.wait(timeout: .seconds(2), clock: clock) }
                == false
        )
        #expect(clock.now.offset == .seconds(2))
    }

    @Test("on the continuous and the suspending clock, a timed wait times out in real time", arguments: [true, false])
    func realClocks(continuous: Bool) async {
        let semaphore = CountingSemaphore()
        let timedOut =
            continuous
            ? await semaphore.wait(timeout: .milliseconds(1), clock: ContinuousClock())
            : await semaphore.wait(timeout: .milliseconds(1), clock: SuspendingClock())
        #expect(timedOut == false)
        semaphore.signal()
        #expect(await semaphore.wait(timeout: .seconds(10), clock: SuspendingClock()) == true)
    }

    @Test("a free resource, or a timeout of zero or less, needs no sleeper on the clock")
    func noSleeperWithoutWaiting() async {
        let clock = TestClock()
        let semaphore = CountingSemaphore(.binary)
        #expect(await semaphore.wait(timeout: .seconds(1), clock: clock) == true)
        #expect(await semaphore.wait(timeout: .zero, clock: clock) == false)
        #expect(await semaphore.wait(timeout: .seconds(-1), clock: clock) == false)
        #expect(clock.deadlines.isEmpty)
    }

    @Test("timed waits on one clock time out in deadline order, each at its own deadline")
    func severalDeadlines() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore()
        // One at a time, so that the line's order is the order here: tasks started together may queue in any order.
        var waiters: [Task<Bool, Never>] = []
        for seconds in [20, 10, 30] {
            waiters.append(Task { await semaphore.wait(timeout: .seconds(seconds), clock: clock) })
            let count = waiters.count
            #expect(await suspendUntil { semaphore.waiterCount == count })
        }
        try await clock.waitForSleepers(3, timeout: patienceLimit)
        clock.advance(to: TestClock.Instant(offset: .seconds(10)))
        let waiter1Returned = await completes { [waiters] in #expect(await waiters[1].value == false) }
        #expect(waiter1Returned)
        #expect(semaphore.waiterCount == 2)
        #expect(semaphore.signal() == 1, "the 20 s waiter, first in line, gets it")
        let waiter0Returned = await completes { [waiters] in #expect(await waiters[0].value == true) }
        #expect(waiter0Returned)
        clock.advance(to: TestClock.Instant(offset: .seconds(30)))
        let waiter2Returned = await completes { [waiters] in #expect(await waiters[2].value == false) }
        #expect(waiter2Returned)
        #expect(clock.deadlines.isEmpty)
    }

    @Test("a deadline racing a signal neither loses nor duplicates the resource, on the test clock")
    func deadlineRacesSignal() async throws {
        var granted = 0
        for round in 0..<300 {
            let clock = TestClock()
            let semaphore = CountingSemaphore()
            let waiter = Task { await semaphore.wait(timeout: .seconds(1), clock: clock) }
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            // The signal lands before the clock passes the deadline, after it but before the deadline's sleeper has
            // taken the waiter out of the line, or after that.
            switch round % 3 {
            case 0:
                async let signal = semaphore.signal()
                async let advance: Void = clock.advance(by: .seconds(1))
                _ = await (signal, advance)
            case 1:
                async let advance: Void = clock.advance(by: .seconds(1))
                async let signal = semaphore.signal()
                _ = await (advance, signal)
            default:
                clock.advance(by: .seconds(1))
                for _ in 0..<round % 50 { await Task.yield() }
                semaphore.signal()
            }
            let gotIt = await waiter.value
            let free = await self.freeResources(semaphore)
            #expect((gotIt ? 1 : 0) + free == 1, "round \(round): granted \(gotIt), free afterwards \(free)")
            #expect(semaphore.waiterCount == 0)
            #expect(clock.deadlines.isEmpty)
            if gotIt { granted += 1 }
        }
        print("deadlineRacesSignal (test clock): the wait got the resource in \(granted)/300 rounds")
    }

    @Test("granted timed waits on a test clock leave no sleeper task behind")
    func noSleeperTaskOutlivesItsWait() async {
        // In a process of its own: the count of live timed waits is process-wide.
        await #expect(processExitsWith: .success) {
            let clock = TestClock()
            let semaphore = CountingSemaphore()
            for _ in 0..<300 {
                let waiter = Task { await semaphore.wait(timeout: .seconds(3_600), clock: clock) }
                guard (try? await clock.waitForSleepers(1, timeout: patienceLimit)) != nil else { exit(1) }
                semaphore.signal()
                guard await waiter.value else { exit(2) }
            }
            guard await suspendUntil({ CountingSemaphore.liveTimedWaits == 0 }) else { exit(3) }
        }
    }

    /// How many resources are free, taken with timed waits of zero that never queue, and given back.
    private func freeResources(_ semaphore: CountingSemaphore) async -> Int {
        var count = 0
        while await semaphore.wait(timeout: .zero) { count += 1 }
        for _ in 0..<count { semaphore.signal() }
        return count
    }
}
