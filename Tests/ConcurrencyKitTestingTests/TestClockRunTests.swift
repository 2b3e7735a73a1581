import AtomicPrimitives
import ConcurrencyKitTesting
import Dispatch
import TestSupport
import Testing

/// Running a `TestClock` until idle, waiting for sleepers, and the reports that replace a hang.
@Suite("TestClock: run until idle, and what it reports", .timeLimit(.minutes(1)))
struct TestClockRunTests {
    @Test("run() follows a chain of sleeps to its end, one deadline at a time, and stops when nothing sleeps")
    func runFollowsAChain() async throws {
        let clock = TestClock()
        let seen = AtomicBox<[Duration]>([])
        let chain = Task {
            for seconds in [5, 1, 3] {
                try await clock.sleep(for: .seconds(seconds))
                seen.mutate { $0.append(clock.now.offset) }
            }
        }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        try await clock.run(operationOf: chain)
        #expect(seen.value == [.seconds(5), .seconds(6), .seconds(9)])
        #expect(clock.now.offset == .seconds(9))
    }

    @Test("run() with nothing asleep returns at once and leaves the time alone")
    func runWhenIdle() async throws {
        let clock = TestClock()
        try await clock.run(timeout: patienceLimit)
        #expect(clock.now.offset == .zero)
    }

    @Test("run() wakes the sleepers of one deadline together, then the next deadline's, until none is left")
    func runWakesEveryDeadline() async throws {
        let clock = TestClock()
        let sleepers = [4, 2, 2, 7].map { seconds in
            Task {
                try await clock.sleep(for: .seconds(seconds))
                return seconds
            }
        }
        try await clock.waitForSleepers(4, timeout: patienceLimit)
        try await clock.run(timeout: patienceLimit)
        #expect(clock.now.offset == .seconds(7))
        #expect(clock.deadlines.isEmpty)
        for sleeper in sleepers { _ = try await sleeper.value }
    }

    @Test("run(_:) waits for an operation that works between its sleeps, and returns its value")
    func runWaitsBetweenSleeps() async throws {
        let clock = TestClock()
        let value = try await clock.run(timeout: patienceLimit) {
            var total = 0
            for attempt in 1...4 {
                // Work that is not a sleep on the clock: a hop to another task and back.
                total += await Task.detached { attempt }.value
                try await clock.sleep(for: .seconds(attempt))
            }
            return total
        }
        #expect(value == 10)
        #expect(clock.now.offset == .seconds(10), "1 + 2 + 3 + 4 seconds on the clock")
    }

    @Test("run(_:) returns what the operation throws")
    func runRethrows() async {
        struct Refused: Error {}
        let clock = TestClock()
        await #expect(throws: Refused.self) {
            try await clock.run(timeout: patienceLimit) {
                try await clock.sleep(for: .seconds(1))
                throw Refused()
            }
        }
        #expect(clock.now.offset == .seconds(1))
    }

    @Test("run(_:) from the main actor runs a main-actor operation and hands its value back")
    @MainActor
    func runFromTheMainActor() async throws {
        let clock = TestClock()
        let model = Countdown(clock: clock)
        let left = try await clock.run(timeout: patienceLimit) { @MainActor in
            try await model.count(from: 3)
            return model.remaining
        }
        #expect(left == 0)
        #expect(model.remaining == 0)
        #expect(clock.now.offset == .seconds(3))
    }

    @Test("waitForSleepers returns once that many tasks sleep, and reports the sleepers it saw when they do not come")
    func waitForSleepersReports() async throws {
        let clock = TestClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(5)) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        try await clock.waitForSleepers(0, timeout: patienceLimit)
        let error = await #expect(throws: TestClockError.self) {
            try await clock.waitForSleepers(2, timeout: .milliseconds(100))
        }
        #expect(error?.reason == .sleepersMissing(expected: 2))
        #expect(error?.deadlines == [TestClock.Instant(offset: .seconds(5))])
        let report = error?.description ?? ""
        #expect(report.contains("waited 0.1 seconds of real time for 2 sleepers"), "\(report)")
        #expect(report.contains("1 sleeper, until 5.0 seconds"), "\(report)")
        sleeper.cancel()
    }

    @Test("an operation that waits for something the clock cannot bring is reported: nothing can ever run")
    func nothingCanRunIsReported() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore()
        let error = await #expect(throws: TestClockError.self) {
            try await clock.run(timeout: .seconds(1)) {
                try await clock.sleep(for: .seconds(1))
                try await semaphore.wait()  // nobody signals
            }
        }
        #expect(error?.reason == .nothingCanRun)
        #expect(error?.now.offset == .seconds(1))
        let report = error?.description ?? ""
        #expect(report.contains("TestClock: nothing can ever run"), "\(report)")
        #expect(report.contains("no sleepers"), "\(report)")
        #expect(await suspendUntil { semaphore.waiterCount == 0 }, "run cancelled the operation, which left the line")
    }

    @Test("a clock that never becomes idle is reported, with what sleeps, instead of running forever")
    func neverIdleIsReported() async throws {
        let clock = TestClock()
        let timer = Task {
            while true { try await clock.sleep(for: .seconds(1)) }
        }
        let error = await #expect(throws: TestClockError.self) {
            try await clock.run(timeout: .seconds(1)) { try await timer.value }
        }
        #expect(error?.reason == .neverIdle)
        #expect(error.map { $0.now.offset >= .seconds(100) } == true, "it moved the time at least 100 times")
        #expect(error?.description.contains("did not become idle within 1.0 seconds of real time") == true)
        timer.cancel()
        _ = await timer.result
    }

    @Test("a woken task that cannot come back out of its sleep is reported, and lands once it can")
    func wakeNotResumedIsReported() async throws {
        let executor = HeldExecutor()
        let clock = TestClock()
        let sleeper = Task(executorPreference: executor) { try await clock.sleep(for: .seconds(1)) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        // The sleeper is on the clock before its job has left the queue: wait for that job to end, so that the
        // suspended queue holds the wake-up (a resume that came while the job still ran would land at once).
        await withCheckedContinuation { (left: CheckedContinuation<Void, Never>) in
            executor.queue.async { left.resume() }
        }
        executor.queue.suspend()
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: TestClockError.self) {
            try await clock.run(timeout: .seconds(1))
        }
        #expect(error?.reason == .wakeNotResumed)
        #expect(error?.description.contains("a task that the clock woke at 1.0 seconds") == true)
        executor.queue.resume()
        #expect(try await completes { try await sleeper.value })
        try await clock.run(timeout: patienceLimit)
    }

    @Test("run is cancelled with its task: it throws CancellationError and cancels the operation")
    func runIsCancellable() async throws {
        let clock = TestClock()
        let semaphore = CountingSemaphore()
        let test = Task {
            try await clock.run(timeout: patienceLimit) { try await semaphore.wait() }
        }
        #expect(await suspendUntil { semaphore.waiterCount == 1 })
        test.cancel()
        let testEnded = await completes { await #expect(throws: CancellationError.self) { try await test.value } }
        #expect(testEnded)
        #expect(await suspendUntil { semaphore.waiterCount == 0 })
    }
}

extension TestClock {
    /// Runs the clock until `task` has finished: `run(_:)` for a task that already runs.
    fileprivate func run(operationOf task: Task<Void, any Error>) async throws {
        try await self.run(timeout: patienceLimit) { try await task.value }
    }
}

/// A main-actor model that counts down one second at a time on the clock it is given.
@MainActor
private final class Countdown {
    private let clock: any Clock<Duration>
    private(set) var remaining = 0

    init(clock: any Clock<Duration>) {
        self.clock = clock
    }

    func count(from start: Int) async throws {
        self.remaining = start
        while self.remaining > 0 {
            try await self.clock.sleep(for: .seconds(1))
            self.remaining -= 1
        }
    }
}

/// A task executor on a serial queue, which a test can suspend to hold up the tasks that prefer it.
private final class HeldExecutor: TaskExecutor {
    let queue = DispatchQueue(label: "test.clock.held-executor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
