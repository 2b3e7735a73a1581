import AtomicPrimitives
import ConcurrencyKitTesting
import TestSupport
import Testing

/// Sleeping, advancing and cancelling on a `TestClock`.
@Suite("TestClock: sleep, advance and cancel", .timeLimit(.minutes(1)))
struct TestClockTests {
    @Test("a sleep wakes exactly when the clock reaches its deadline, not a nanosecond before")
    func wakesAtDeadline() async throws {
        let clock = TestClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(5)) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        clock.advance(by: .seconds(5) - .nanoseconds(1))
        #expect(clock.deadlines == [TestClock.Instant(offset: .seconds(5))], "still asleep")
        clock.advance(by: .nanoseconds(1))
        #expect(clock.deadlines.isEmpty, "woken by the advance itself")
        #expect(try await completes { try await sleeper.value })
        #expect(clock.now.offset == .seconds(5))
    }

    @Test("a sleep until now or earlier returns at once, without becoming a sleeper")
    func pastDeadlineReturnsAtOnce() async throws {
        let clock = TestClock(now: TestClock.Instant(offset: .seconds(10)))
        try await clock.sleep(until: clock.now)
        try await clock.sleep(until: TestClock.Instant(offset: .seconds(3)))
        try await clock.sleep(for: .zero)
        #expect(clock.deadlines.isEmpty)
        #expect(clock.now.offset == .seconds(10))
    }

    @Test("an advance wakes the sleepers that are due, earliest deadline first, and leaves the others asleep")
    func wakesDueSleepersOnly() async throws {
        let clock = TestClock()
        var sleepers: [Int: Task<Void, any Error>] = [:]
        for seconds in [3, 1, 4, 2] {
            sleepers[seconds] = Task { try await clock.sleep(for: .seconds(seconds)) }
        }
        try await clock.waitForSleepers(4, timeout: patienceLimit)
        #expect(clock.deadlines.map(\.offset) == [.seconds(1), .seconds(2), .seconds(3), .seconds(4)])
        clock.advance(to: TestClock.Instant(offset: .seconds(2)))
        #expect(clock.deadlines.map(\.offset) == [.seconds(3), .seconds(4)])
        let (first, second, third, fourth) = (sleepers[1]!, sleepers[2]!, sleepers[3]!, sleepers[4]!)
        #expect(try await completes { try await first.value })
        #expect(try await completes { try await second.value })
        clock.advance(by: .zero)
        #expect(clock.deadlines.count == 2, "an advance by zero wakes nobody")
        clock.advance(by: .seconds(2))
        #expect(clock.deadlines.isEmpty)
        #expect(try await completes { try await third.value })
        #expect(try await completes { try await fourth.value })
    }

    @Test("a cancelled sleeper leaves at once, from inside cancel(), and throws CancellationError")
    func cancellationRemovesTheSleeperAtOnce() async throws {
        let clock = TestClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(60)) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        sleeper.cancel()
        #expect(clock.deadlines.isEmpty, "gone before cancel() returned")
        let sleeperEnded = await completes { await #expect(throws: CancellationError.self) { try await sleeper.value } }
        #expect(sleeperEnded)
        clock.advance(by: .seconds(60))
        try await clock.run(timeout: patienceLimit)  // nothing is in flight: the cancelled sleep was never woken
    }

    @Test("a task cancelled before it sleeps throws at once and never becomes a sleeper")
    func cancelledBeforeSleeping() async {
        let clock = TestClock()
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }
        let sleeperEnded = await completes { await #expect(throws: CancellationError.self) { try await sleeper.value } }
        #expect(sleeperEnded)
        #expect(clock.deadlines.isEmpty)
    }

    @Test("a cancel racing an advance either wakes the sleeper or cancels it, never both, and nothing is left behind")
    func cancelRacesAdvance() async throws {
        var woken = 0
        for round in 0..<300 {
            let clock = TestClock()
            let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            switch round % 3 {
            case 0:
                async let cancel: Void = sleeper.cancel()
                async let advance: Void = clock.advance(by: .seconds(1))
                _ = await (cancel, advance)
            case 1:
                async let advance: Void = clock.advance(by: .seconds(1))
                async let cancel: Void = sleeper.cancel()
                _ = await (advance, cancel)
            default:
                // Woken, and cancelled before or after its task comes back out of the sleep.
                clock.advance(by: .seconds(1))
                for _ in 0..<round % 20 { await Task.yield() }
                sleeper.cancel()
            }
            switch await sleeper.result {
            case .success: woken += 1
            case .failure(let error): #expect(error is CancellationError, "round \(round): \(error)")
            }
            #expect(clock.deadlines.isEmpty, "round \(round)")
            try await clock.run(timeout: patienceLimit)  // no wake is left in flight
        }
        print("cancelRacesAdvance: the advance won \(woken)/300 rounds")
    }

    @Test(
        "an instant prints its offset in seconds, exact to the attosecond",
        arguments: [
            (Duration.seconds(3_605), "3605.0 seconds"),
            (.zero, "0.0 seconds"),
            (.nanoseconds(1), "0.000000001 seconds"),
            (.seconds(3_605) + .nanoseconds(1), "3605.000000001 seconds"),
            (.milliseconds(-1_500), "-1.5 seconds"),
            (Duration(secondsComponent: 0, attosecondsComponent: 1), "0.000000000000000001 seconds"),
        ]
    )
    func instantDescription(offset: Duration, printed: String) {
        #expect(TestClock.Instant(offset: offset).description == printed)
    }

    @Test("advancing by a negative duration traps with a message")
    func negativeAdvanceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            TestClock().advance(by: .seconds(-1))
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("TestClock.advance(by:): the duration must not be negative"), "\(stderr)")
        #expect(stderr.contains("-1.0 seconds"), "\(stderr)")
    }

    @Test("advancing to an earlier instant traps with a message naming both instants")
    func advanceBackTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let clock = TestClock(now: TestClock.Instant(offset: .seconds(5)))
            clock.advance(to: TestClock.Instant(offset: .seconds(2)))
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("TestClock.advance(to:): time cannot go back"), "\(stderr)")
        #expect(stderr.contains("now is 5.0 seconds, asked to move to 2.0 seconds"), "\(stderr)")
    }

    @Test("many sleepers from many tasks each wake once, never before their deadline, however the time moves")
    func manySleepers() async throws {
        let clock = TestClock()
        var generator = SplitMix64(seed: 21)
        let count = 2_000
        let deadlines = (0..<count).map { _ in Duration.milliseconds(1 + Int(generator.next() % 10_000)) }
        let wakes = try await withThrowingTaskGroup(of: (Duration, Duration).self) { group in
            for deadline in deadlines {
                group.addTask {
                    try await clock.sleep(until: TestClock.Instant(offset: deadline))
                    return (deadline, clock.now.offset)
                }
            }
            try await clock.waitForSleepers(count, timeout: patienceLimit)
            #expect(clock.deadlines.map(\.offset) == deadlines.sorted())
            // Move the time in uneven steps, checking each time that exactly the sleepers not yet due still sleep.
            while clock.now.offset <= .seconds(10) {
                clock.advance(by: .milliseconds(Int(generator.next() % 700)))
                let now = clock.now.offset
                #expect(clock.deadlines.map(\.offset) == deadlines.filter { $0 > now }.sorted())
            }
            var wakes: [(Duration, Duration)] = []
            for try await wake in group { wakes.append(wake) }
            return wakes
        }
        #expect(wakes.count == count)
        #expect(wakes.allSatisfy { deadline, seen in seen >= deadline }, "no sleeper woke before its deadline")
    }

    @Test("clocks used in parallel tests never see each other's time", arguments: 0..<8)
    func parallelClocks(index: Int) async throws {
        let clock = TestClock()
        let sleepers = (1...5).map { step in
            Task { try await clock.sleep(for: .seconds(index * 10 + step)) }
        }
        try await clock.waitForSleepers(5, timeout: patienceLimit)
        #expect(clock.deadlines.map(\.offset) == (1...5).map { .seconds(index * 10 + $0) })
        for (step, sleeper) in sleepers.enumerated() {
            clock.advance(to: TestClock.Instant(offset: .seconds(index * 10 + step + 1)))
            #expect(try await completes { try await sleeper.value })
            #expect(clock.deadlines.count == 4 - step)
        }
        #expect(clock.now.offset == .seconds(index * 10 + 5))
    }

    @Test("a hundred clocks driven at once from a hundred tasks each run their own schedule")
    func manyClocksAtOnce() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 1...100 {
                group.addTask {
                    let clock = TestClock()
                    let ticks = try await clock.run(timeout: patienceLimit) {
                        var ticks = 0
                        for _ in 0..<index % 7 + 1 {
                            try await clock.sleep(for: .milliseconds(index))
                            ticks += 1
                        }
                        return ticks
                    }
                    #expect(ticks == index % 7 + 1)
                    #expect(clock.now.offset == .milliseconds(index * (index % 7 + 1)))
                }
            }
            try await group.waitForAll()
        }
    }
}
