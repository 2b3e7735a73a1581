import AtomicPrimitives
import ConcurrencyKitTesting
import Dispatch
import TestSupport
import Testing

/// `TestClock.run { }` with tasks parked in ConcurrencyKit's waits: the time moves past them, and a cycle of them is
/// reported as a deadlock instead of a hang.
@Suite("TestClock: runs with tasks parked in the package's waits", .timeLimit(.minutes(3)))
struct TestClockWaitTests {
    @Test("run moves the time past a task parked on a semaphore that a sleeping task signals, and both finish")
    func advancesPastParkedTask() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore(name: "ready")
        let finished = try await clock.run(timeout: patienceLimit) {
            try await withThrowingTaskGroup(of: TestClock.Instant.self) { group in
                group.addTask {
                    try await semaphore.acquire()
                    return clock.now
                }
                group.addTask {
                    try await clock.sleep(for: .seconds(60))
                    semaphore.signal()
                    return clock.now
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(finished.map(\.offset) == [.seconds(60), .seconds(60)])
        #expect(clock.now.offset == .seconds(60))
    }

    @Test("run reports two tasks in withPermit of one semaphore awaiting the other's as a deadlock, before its timeout")
    func reportsSemaphoreCycle() async throws {
        let clock = TestClock()
        let first = CountingSemaphore(.binary, name: "first")
        let second = CountingSemaphore(.binary, name: "second")
        let timeout = Duration.seconds(60)
        // When the second task has taken its permit and goes for the other's: the cycle forms right after.
        let formed = AtomicBox<ContinuousClock.Instant?>(nil)
        let thrown = await #expect(throws: TestClockError.self) {
            try await clock.run(timeout: timeout) {
                let firstHeld = CountingSemaphore(name: "first held")
                let secondHeld = CountingSemaphore(name: "second held")
                async let one: Void = first.withPermit {
                    firstHeld.signal()
                    try await secondHeld.acquire()
                    try await second.acquire()
                }
                async let two: Void = second.withPermit {
                    secondHeld.signal()
                    try await firstHeld.acquire()
                    formed.mutate { $0 = ContinuousClock.now }
                    try await first.acquire()
                }
                _ = try await (one, two)
            }
        }
        let error = try #require(thrown)
        #expect(error.reason == .deadlock, "\(error)")
        // Seen in milliseconds when alone; a bound far below the timeout, for a loaded machine.
        let elapsed = ContinuousClock.now - (formed.value ?? .now)
        #expect(elapsed < timeout / 3, "reported \(elapsed) after the cycle formed: \(error)")
        #expect(error.description.contains("\"first\"") && error.description.contains("\"second\""), "\(error)")
        #expect(error.description.contains("Deadlock 1 of"), "\(error)")
    }

    @Test("a task parked on a semaphore nobody signals is named in nothingCanRun's report, not called a deadlock")
    func stallWithoutCycleNamesTheWait() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore(name: "never signalled")
        let thrown = await #expect(throws: TestClockError.self) {
            try await clock.run(timeout: .milliseconds(300)) { try await semaphore.acquire() }
        }
        let error = try #require(thrown)
        #expect(error.reason == .nothingCanRun, "\(error)")
        #expect(error.description.contains("\"never signalled\""), "\(error)")
    }

    @Test("a cycle with a timed wait is not reported: its timeout can still end it")
    func timedCycleIsNotADeadlock() async throws {
        let clock = TestClock()
        let first = CountingSemaphore(.binary, name: "first")
        let second = CountingSemaphore(.binary, name: "second")
        let outcome = try await clock.run(timeout: patienceLimit) {
            let firstHeld = CountingSemaphore(name: "first held")
            let secondHeld = CountingSemaphore(name: "second held")
            async let one: Bool = first.withPermit {
                firstHeld.signal()
                try await secondHeld.acquire()
                return await second.wait(timeout: .milliseconds(200))
            }
            async let two: Void = second.withPermit {
                secondHeld.signal()
                try await firstHeld.acquire()
                try await first.acquire()
                first.signal()
            }
            return try await (one, two).0
        }
        #expect(outcome == false)
    }
}
