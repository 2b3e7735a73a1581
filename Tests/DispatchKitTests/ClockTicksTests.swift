import ConcurrencyKitTesting
import DispatchKit
import Foundation
import TestSupport
import Testing

/// `ClockTicks` on a clock the test moves: every tick at its due instant, without Dispatch and without real time.
@Suite("ClockTicks", .timeLimit(.minutes(1)))
struct ClockTicksTests {
    @Test("ticks come one interval apart from the start of the loop, each at its due instant")
    func ticksOnSchedule() async throws {
        let clock = TestClock(now: TestClock.Instant(offset: .seconds(100)))
        let ticks = try await clock.run(timeout: patienceLimit) {
            var ticks: [Duration] = []
            for await tick in ClockTicks(every: .seconds(2), clock: clock) {
                ticks.append(tick.offset)
                if ticks.count == 4 { break }
            }
            return ticks
        }
        #expect(ticks == [.seconds(102), .seconds(104), .seconds(106), .seconds(108)])
        #expect(clock.now.offset == .seconds(108))
    }

    @Test("no tick comes before it is due")
    func noTickEarly() async throws {
        let clock = TestClock()
        let loop = Task {
            var iterator = ClockTicks(every: .seconds(1), clock: clock).makeAsyncIterator()
            return await iterator.next()
        }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        clock.advance(by: .seconds(1) - .nanoseconds(1))
        #expect(clock.deadlines.count == 1, "the loop still sleeps")
        clock.advance(by: .nanoseconds(1))
        let loopReturned = await completes { #expect(await loop.value?.offset == .seconds(1)) }
        #expect(loopReturned)
    }

    @Test("a loop that falls behind gets the latest tick due at once, then the schedule goes on from there")
    func fallingBehindSkipsToTheLatest() async throws {
        let clock = TestClock()
        var iterator = ClockTicks(every: .seconds(1), clock: clock).makeAsyncIterator()
        clock.advance(by: .milliseconds(4_500))  // ticks at 1, 2, 3 and 4 s fell due while the loop was away
        #expect(await iterator.next()?.offset == .seconds(4))
        let next = Task { [iterator] in
            var iterator = iterator
            return await iterator.next()
        }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        #expect(clock.deadlines == [TestClock.Instant(offset: .seconds(5))])
        clock.advance(by: .milliseconds(500))
        let nextReturned = await completes { #expect(await next.value?.offset == .seconds(5)) }
        #expect(nextReturned)
    }

    @Test("cancelling the loop's task ends the sequence and takes its sleep off the clock at once")
    func cancellationEndsTheLoop() async throws {
        let clock = TestClock()
        let loop = Task {
            var count = 0
            for await _ in ClockTicks(every: .seconds(1), clock: clock) { count += 1 }
            return count
        }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        clock.advance(by: .seconds(1))
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        loop.cancel()
        #expect(clock.deadlines.isEmpty)
        let loopReturned = await completes { #expect(await loop.value == 1) }
        #expect(loopReturned)
    }

    @Test("a loop on the main actor takes its ticks there, and may touch main-actor state")
    @MainActor
    func mainActorLoop() async throws {
        let clock = TestClock()
        let board = TickBoard()
        let loop = Task { @MainActor in
            for await tick in ClockTicks(every: .seconds(1), clock: clock) {
                MainActor.assertIsolated()
                board.ticks.append(tick.offset)
                if board.ticks.count == 3 { break }
            }
        }
        try await clock.run(timeout: patienceLimit) { await loop.value }
        #expect(board.ticks == [.seconds(1), .seconds(2), .seconds(3)])
    }

    @Test(
        "an interval too long to represent never ticks, on any clock, and the loop ends when its task is cancelled",
        arguments: [Duration(attoseconds: .max), .seconds(Int64.max), .nanoseconds(Int64.max), .seconds(1e19)]
    )
    func endlessInterval(interval: Duration) async {
        let testClock = TestClock()
        let onTestClock = Task {
            var iterator = ClockTicks(every: interval, clock: testClock).makeAsyncIterator()
            return await iterator.next()
        }
        let onContinuousClock = Task {
            var iterator = ClockTicks(every: interval).makeAsyncIterator()
            return await iterator.next()
        }
        // Nothing sleeps on the test clock, and moving it a thousand years brings no tick.
        testClock.advance(by: .seconds(86_400 * 365 * 1_000))
        onTestClock.cancel()
        onContinuousClock.cancel()
        let onTestClockReturned = await completes { #expect(await onTestClock.value == nil) }
        #expect(onTestClockReturned)
        let onContinuousClockReturned = await completes { #expect(await onContinuousClock.value == nil) }
        #expect(onContinuousClockReturned)
    }

    @Test("an interval of zero or less traps with a message that names the value")
    func nonPositiveIntervalTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ClockTicks(every: .zero, clock: TestClock())
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("ClockTicks: the interval must be more than zero; got 0.0 seconds"), "\(stderr)")
    }

    @Test("on the continuous clock, ticks come in real time, an interval apart")
    func continuousClock() async {
        let start = ContinuousClock.now
        var ticks: [ContinuousClock.Instant] = []
        for await tick in ClockTicks(every: .milliseconds(5)) {
            ticks.append(tick)
            if ticks.count == 3 { break }
        }
        #expect(ticks.count == 3)
        #expect(ticks.first.map { $0 >= start.advanced(by: .milliseconds(5)) } == true)
        for (earlier, later) in zip(ticks, ticks.dropFirst()) {
            let gap = earlier.duration(to: later)
            let intervals = Int((gap / .milliseconds(5)).rounded())
            #expect(intervals >= 1 && gap == .milliseconds(5) * intervals, "ticks \(gap) apart")
        }
        #expect(ContinuousClock.now >= start.advanced(by: .milliseconds(15)))
    }
}

/// Main-actor state that a tick loop on the main actor appends to.
@MainActor
private final class TickBoard {
    var ticks: [Duration] = []
}
