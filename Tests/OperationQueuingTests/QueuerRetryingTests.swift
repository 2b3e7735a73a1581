import ConcurrencyKitTesting
import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

private struct Flaky: Error, Equatable {
    let attempt: Int
}

private struct Fatal: Error {}

/// A body that fails its first `failures` attempts with `Flaky` and then returns the attempt's number; it counts the
/// attempts.
private final class FlakyBody: Sendable {
    private let count = AtomicBox(0)
    private let failures: Int

    init(failing failures: Int) { self.failures = failures }

    var attempts: Int { self.count.value }

    func callAsFunction() throws -> Int {
        let attempt = self.count.mutate { count in
            count += 1
            return count
        }
        if attempt <= self.failures { throw Flaky(attempt: attempt) }
        return attempt
    }
}

/// A call that did not end within ten seconds.
private struct Unsettled: Error {}

/// What `task` returns or throws; `Unsettled` if it has not ended within ten seconds, and then it is cancelled, so
/// that a call that hangs fails its test instead of hanging it.
private func settle<Value: Sendable>(_ task: Task<Value, any Error>) async throws -> Value {
    let result = AtomicBox<Result<Value, any Error>?>(nil)
    Task {
        let outcome = await task.result
        result.mutate { $0 = outcome }
    }
    guard await suspendUntil({ result.value != nil }), let outcome = result.value else {
        task.cancel()
        throw Unsettled()
    }
    return try outcome.get()
}

@Suite("Queuer.run(retrying:)", .timeLimit(.minutes(1)))
struct QueuerRetryingTests {
    @Test("returns the first attempt that returns; throws the last attempt's error when the attempts run out")
    func valueOrLastError() async throws {
        let queuer = Queuer(name: "test.retrying.value")
        let recovering = FlakyBody(failing: 2)
        #expect(try await queuer.run(retrying: RetryConfiguration(maximumAttempts: 3)) { try recovering() } == 3)
        #expect(recovering.attempts == 3)

        let failing = FlakyBody(failing: .max)
        await #expect(throws: Flaky(attempt: 4)) {
            try await queuer.run(retrying: RetryConfiguration(maximumAttempts: 4)) { try failing() }
        }
        #expect(failing.attempts == 4, "maximumAttempts counts the first attempt")

        let once = FlakyBody(failing: .max)
        await #expect(throws: Flaky(attempt: 1)) {
            try await queuer.run(retrying: RetryConfiguration(maximumAttempts: 1)) { try once() }
        }
        #expect(once.attempts == 1)
    }

    @Test("shouldRetry sees each failed attempt's error and number, never the last one's; a refusal throws at once")
    func errorFilter() async throws {
        let queuer = Queuer(name: "test.retrying.filter")
        let asked = AtomicBox<[Int]>([])
        let failing = FlakyBody(failing: .max)
        let retries = RetryConfiguration(maximumAttempts: 3) { error, attempt in
            asked.mutate { $0.append(attempt) }
            return (error as? Flaky)?.attempt == attempt
        }
        await #expect(throws: Flaky(attempt: 3)) { try await queuer.run(retrying: retries) { try failing() } }
        #expect(asked.value == [1, 2], "asked after attempts 1 and 2, not after the last")

        let refused = AtomicBox(0)
        let calls = AtomicBox(0)
        await #expect(throws: Fatal.self) {
            try await queuer.run(retrying: RetryConfiguration(maximumAttempts: 5) { _, _ in false }) {
                calls.mutate { $0 += 1 }
                refused.mutate { $0 += 1 }
                throw Fatal()
            }
        }
        #expect(calls.value == 1, "a refused error is not retried")
    }

    @Test("the delays pass on the given clock, exactly the policy's with the seed's jitter, in no real time")
    func backOffOnATestClock() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retrying.clock")
        let policy = RetryPolicy.exponential(initial: .seconds(600), maximum: .seconds(2_400), jitter: 0.5)
        let retries = RetryConfiguration(maximumAttempts: 4, policy: policy, jitterSeed: 42)
        let body = FlakyBody(failing: 3)
        let started = ContinuousClock.now
        let call = Task { try await queuer.run(retrying: retries, clock: clock) { try body() } }
        var expected = Duration.zero
        for retry in 1...3 {
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            let delay = policy.delay(beforeRetry: retry, jitterSeed: 42)
            expected += delay
            #expect(clock.deadlines.map(\.offset) == [expected], "retry \(retry) waits the policy's delay")
            clock.advance(by: delay - .nanoseconds(1))
            #expect(clock.deadlines.count == 1, "not woken a nanosecond early")
            #expect(body.attempts == retry, "the next attempt waits for the clock")
            clock.advance(by: .nanoseconds(1))
        }
        #expect(try await settle(call) == 4)
        let wall = started.duration(to: .now)
        #expect(clock.now.offset == expected)
        #expect(expected >= .seconds(2_100), "three jittered waits of 10, 20 and 40 minutes, less at most half")
        #expect(wall * 10 <= expected, "\(expected) of back-off took \(wall) of real time")
        print("Queuer.run(retrying:) back-off: \(expected) on the test clock took \(wall) of real time")
    }

    @Test("the same jitter seed gives the same delays; another seed, other delays")
    func seededJitterIsReproducible() async throws {
        func delays(seed: UInt64) async throws -> [Duration] {
            let clock = TestClock()
            let queuer = Queuer(name: "test.retrying.seed")
            let policy = RetryPolicy.exponential(initial: .seconds(1), maximum: .seconds(60), jitter: 1)
            let retries = RetryConfiguration(maximumAttempts: 6, policy: policy, jitterSeed: seed)
            let body = FlakyBody(failing: 5)
            let call = Task { try await queuer.run(retrying: retries, clock: clock) { try body() } }
            var delays: [Duration] = []
            for _ in 1...5 {
                try await clock.waitForSleepers(1, timeout: patienceLimit)
                let delay = clock.now.duration(to: clock.deadlines[0])
                delays.append(delay)
                clock.advance(by: delay)
            }
            _ = try await settle(call)
            return delays
        }
        let first = try await delays(seed: 7)
        let second = try await delays(seed: 7)
        let other = try await delays(seed: 8)
        #expect(first == second)
        #expect(first != other)
        #expect(Set(first).count == 5, "jittered, and growing: no two waits alike")
    }

    @Test("cancelling the call during its delay throws CancellationError at once; the wait and the body go")
    func cancelDuringTheDelay() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retrying.cancel")
        let probe = LifetimeProbe()
        let attempts = AtomicBox(0)
        var call: Task<Int, any Error>?
        do {
            let tracked = probe.make()
            call = Task {
                try await queuer.run(
                    retrying: RetryConfiguration(maximumAttempts: 5, policy: .constant(.seconds(3_600))),
                    clock: clock
                ) {
                    _ = tracked
                    attempts.mutate { $0 += 1 }
                    throw Flaky(attempt: 1)
                }
            }
        }
        let task = try #require(call)
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        let cancelled = ContinuousClock.now
        task.cancel()
        await #expect(throws: CancellationError.self) { try await settle(task) }
        let took = cancelled.duration(to: .now)
        #expect(clock.deadlines.isEmpty, "the cancelled wait leaves nothing asleep on the clock")
        #expect(attempts.value == 1, "no attempt after the cancel")
        #expect(await suspendUntil { probe.alive == 0 }, "the call keeps its body nowhere once it has thrown")
        print("Queuer.run(retrying:) cancelled during a one-hour delay: threw after \(took)")
    }

    @Test("cancelling during a one-hour delay on the continuous clock ends the call promptly")
    func cancelDuringARealDelay() async throws {
        let queuer = Queuer(name: "test.retrying.cancel.continuous")
        let clock = ObservedContinuousClock()
        let call = Task {
            try await queuer.run(
                retrying: RetryConfiguration(maximumAttempts: 2, policy: .constant(.seconds(3_600))),
                clock: clock
            ) { throw Flaky(attempt: 1) }
        }
        try await clock.sleeping.acquire()
        let cancelled = ContinuousClock.now
        call.cancel()
        await #expect(throws: CancellationError.self) { try await settle(call) }
        let took = cancelled.duration(to: .now)
        #expect(took < .seconds(600), "long before the hour")
        print("Queuer.run(retrying:) cancelled during a one-hour delay on the continuous clock: threw after \(took)")
    }

    @Test("cancelling the call while an attempt runs cancels its body; no further attempt")
    func cancelDuringAnAttempt() async throws {
        let queuer = Queuer(name: "test.retrying.cancel.body")
        let started = CountingSemaphore()
        let attempts = AtomicBox(0)
        let call = Task {
            try await queuer.run(retrying: RetryConfiguration(maximumAttempts: 5)) {
                let attempt = attempts.mutate { count in
                    count += 1
                    return count
                }
                started.signal()
                do { try await Task.sleep(for: .seconds(3_600)) } catch { throw Flaky(attempt: attempt) }
                return attempt
            }
        }
        try await started.acquire()
        call.cancel()
        await #expect(throws: Flaky(attempt: 1), "what the cancelled attempt threw") { try await settle(call) }
        #expect(await completes { await queuer.waitForAll() })
        #expect(attempts.value == 1)
    }

    @Test("an attempt cancelled by cancelAll() is not retried")
    func cancelAllStopsTheRetries() async throws {
        let queuer = Queuer(name: "test.retrying.cancelall")
        let started = CountingSemaphore()
        let attempts = AtomicBox(0)
        let call = Task {
            try await queuer.run(retrying: RetryConfiguration(maximumAttempts: 5)) {
                attempts.mutate { $0 += 1 }
                started.signal()
                do { try await Task.sleep(for: .seconds(3_600)) } catch { throw Flaky(attempt: 1) }
            }
        }
        try await started.acquire()
        queuer.cancelAll()
        await #expect(throws: Flaky(attempt: 1)) { try await settle(call) }
        #expect(attempts.value == 1)
    }

    @Test("a call in its delay holds no slot: other work runs meanwhile")
    func delayHoldsNoSlot() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retrying.slot", maxConcurrentOperationCount: 1)
        let body = FlakyBody(failing: 1)
        let retrying = Task {
            try await queuer.run(retrying: RetryConfiguration(policy: .constant(.seconds(60))), clock: clock) {
                try body()
            }
        }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        let other = Task { try await queuer.run { "ran during the delay" } }
        let finished = AtomicBox(false)
        Task {
            _ = await other.result  // no limit that could cancel it: `suspendUntil` below is the test's
            finished.mutate { $0 = true }
        }
        #expect(await suspendUntil { finished.value }, "the only slot is free while the first call waits")
        #expect(try await settle(other) == "ran during the delay")
        clock.advance(by: .seconds(60))
        #expect(try await settle(retrying) == 2)
    }

    @Test("attempts of many calls never run more at once than the queue's limit")
    func underTheConcurrencyLimit() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retrying.limit", maxConcurrentOperationCount: 2)
        let gauge = AtomicBox((inside: 0, peak: 0, total: 0))
        let retries = RetryConfiguration(maximumAttempts: 3, policy: .constant(.seconds(1)))
        let calls = (0..<6).map { index in
            Task {
                let body = FlakyBody(failing: 2)  // each call fails twice, then returns
                return try await queuer.run(retrying: retries, clock: clock) {
                    gauge.mutate { state in
                        state.inside += 1
                        state.total += 1
                        state.peak = max(state.peak, state.inside)
                    }
                    // Real time, so that attempts overlap if nothing keeps them apart; not a synchronisation.
                    try await Task.sleep(for: .milliseconds(2))
                    gauge.mutate { $0.inside -= 1 }
                    return try body() * 0 + index
                }
            }
        }
        // Counted as they end, whenever that is: a wait with a limit here (`settle`) cancelled a call that a loaded
        // machine had made slower than the limit, which then threw CancellationError.
        let finished = AtomicBox(0)
        for call in calls {
            Task {
                _ = await call.result
                finished.mutate { $0 += 1 }
            }
        }
        while finished.value < calls.count {
            guard await suspendUntil({ finished.value == calls.count || !clock.deadlines.isEmpty }) else { break }
            clock.advance(by: .seconds(1))
        }
        var values: [Int] = []
        for call in calls { values.append(try await settle(call)) }
        #expect(values == Array(0..<6))
        #expect(gauge.value.total == 18)
        #expect(gauge.value.peak <= 2, "peak \(gauge.value.peak)")
    }

    @Test("under total failure a budget holds attempts to 1.1 per call, plus the retries it starts with")
    func budgetUnderTotalFailure() async throws {
        let queuer = Queuer(name: "test.retrying.budget", maxConcurrentOperationCount: 4)
        let budget = RetryBudget()
        let retries = RetryConfiguration(maximumAttempts: 3, budget: budget)
        let attempts = AtomicBox(0)
        let failing: @Sendable () async throws -> Void = {
            attempts.mutate { $0 += 1 }
            throw Flaky(attempt: 0)
        }
        for _ in 0..<1_000 { _ = try? await queuer.run(retrying: retries, failing) }
        let first = attempts.value
        #expect(first <= 1_100 + budget.capacity, "\(first) attempts for 1,000 calls")
        #expect(first >= 1_000 + 100 + budget.capacity - 2, "the budget allows what it holds and earns")
        for _ in 0..<1_000 { _ = try? await queuer.run(retrying: retries, failing) }
        let steady = attempts.value - first
        #expect(steady <= 1_100, "\(steady) attempts for 1,000 more calls")
        #expect(steady >= 1_099, "one retry earned per ten calls")
        // 1,000 calls at once, on a queue four wide: deposits that find the budget full are lost, never more.
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 { group.addTask { _ = try? await queuer.run(retrying: retries, failing) } }
        }
        let concurrent = attempts.value - first - steady
        #expect(concurrent <= 1_100 + budget.capacity, "\(concurrent) attempts for 1,000 concurrent calls")
        print(
            "RetryBudget under total failure, attempts per call: \(Double(first) / 1_000) for the first 1,000 "
                + "calls, \(Double(steady) / 1_000) for the next 1,000, \(Double(concurrent) / 1_000) for 1,000 "
                + "concurrent ones"
        )
    }

    @Test("an error the filter refuses spends nothing from the budget; without a budget every retry happens")
    func budgetAndFilter() async throws {
        let queuer = Queuer(name: "test.retrying.budget.filter")
        let budget = RetryBudget(retriesPerCall: 0, capacity: 1)
        await #expect(throws: Fatal.self) {
            try await queuer.run(retrying: RetryConfiguration(budget: budget) { _, _ in false }) { throw Fatal() }
        }
        #expect(budget.availableRetries == 1)
        let body = FlakyBody(failing: 2)
        await #expect(throws: Flaky(attempt: 2), "one retry, then the budget is empty") {
            try await queuer.run(retrying: RetryConfiguration(maximumAttempts: 3, budget: budget)) { try body() }
        }
        #expect(budget.availableRetries == 0)
        let unlimited = FlakyBody(failing: 2)
        #expect(try await queuer.run(retrying: RetryConfiguration(maximumAttempts: 3)) { try unlimited() } == 3)
    }

    @Test("a retry cancelled during its back-off gives its token back to the budget")
    func cancelledBackOffCostsNoBudget() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retrying.budget.cancel")
        let budget = RetryBudget(retriesPerCall: 0, capacity: 1)
        let retries = RetryConfiguration(maximumAttempts: 2, policy: .constant(.seconds(3_600)), budget: budget)
        let call = Task { try await queuer.run(retrying: retries, clock: clock) { () -> Int in throw Fatal() } }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        #expect(budget.availableRetries == 0, "withdrawn for the retry that waits")
        call.cancel()
        let callEnded = await completes { await #expect(throws: CancellationError.self) { try await call.value } }
        #expect(callEnded)
        #expect(budget.availableRetries == 1, "the retry never happened: its token is back")
    }

    @Test("a retry cancelled while it waits for its slot, its body never run, gives its token back to the budget")
    func cancelledWhileQueuedCostsNoBudget() async throws {
        let queuer = Queuer(name: "test.retrying.budget.queued", maxConcurrentOperationCount: 1)
        let budget = RetryBudget(retriesPerCall: 0, capacity: 1)
        let retries = RetryConfiguration(maximumAttempts: 2, policy: .immediate, budget: budget)
        let ran = AtomicBox(0)
        let call = Task {
            try await queuer.run(retrying: retries) { () -> Int in
                ran.mutate { $0 += 1 }
                queuer.pause()  // the retry, with no back-off, waits in the queue
                throw Fatal()
            }
        }
        #expect(await suspendUntil { budget.availableRetries == 0 && queuer.operationCount == 1 })
        call.cancel()
        let callEnded = await completes { await #expect(throws: CancellationError.self) { try await call.value } }
        #expect(callEnded)
        #expect(ran.value == 1, "the retry's body never ran")
        #expect(budget.availableRetries == 1, "so its token is back")
        queuer.resume()
    }

    @Test("from a @MainActor consumer: the body runs on the main actor when it says so, and is retried")
    @MainActor
    func fromTheMainActor() async throws {
        let model = RetryingScreenModel()
        #expect(try await model.load() == "loaded on attempt 2")
        #expect(model.attempts == 2)
    }

    @Test("from nonisolated code, with the default clock")
    func fromNonisolatedCode() async throws {
        let value = try await Task.detached {
            let body = FlakyBody(failing: 1)
            return try await Queuer(name: "test.retrying.detached").run(
                retrying: RetryConfiguration(policy: .constant(.milliseconds(1)))
            ) { try body() }
        }.value
        #expect(value == 2)
    }

    @Test("maximumAttempts below 1 traps with a message naming the type, the value and the rule", arguments: [0, -2])
    func maximumAttemptsTraps(value: Int) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [value] in
            _ = RetryConfiguration(maximumAttempts: value)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("RetryConfiguration: maximumAttempts is the number of attempts in all"))
        #expect(stderr.contains("must be 1 or more, not \(value)"))
    }

    @Test("setting maximumAttempts below 1 later traps too")
    func maximumAttemptsSetterTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var retries = RetryConfiguration()
            retries.maximumAttempts = 0
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("must be 1 or more, not 0"))
    }

    @Test("a budget's numbers out of range trap with a message naming the parameter and the value", arguments: 0..<3)
    func budgetTraps(index: Int) async {
        let expected = [
            "retriesPerCall is the share of a retry each call earns and must be from 0 to 1, not 1.5",
            "retriesPerCall is the share of a retry each call earns and must be from 0 to 1, not nan",
            "capacity is the most retries the budget holds and must be from 1 to",
        ][index]
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [index] in
            switch index {
            case 0: _ = RetryBudget(retriesPerCall: 1.5)
            case 1: _ = RetryBudget(retriesPerCall: .nan)
            default: _ = RetryBudget(capacity: 0)
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("RetryBudget: \(expected)"))
    }
}

/// The continuous clock, which signals `sleeping` as each sleep begins.
private struct ObservedContinuousClock: Clock {
    let sleeping = CountingSemaphore()
    private let base = ContinuousClock()

    var now: ContinuousClock.Instant { self.base.now }
    var minimumResolution: Duration { self.base.minimumResolution }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration? = nil) async throws {
        self.sleeping.signal()
        try await self.base.sleep(until: deadline, tolerance: tolerance)
    }
}

/// A @MainActor consumer of run(retrying:): compile-time proof that the API fits an app target.
@MainActor
private final class RetryingScreenModel {
    var attempts = 0
    let queuer = Queuer(name: "retrying screen", maxConcurrentOperationCount: 2)

    func load() async throws -> String {
        try await self.queuer.run(retrying: RetryConfiguration(maximumAttempts: 3)) { @MainActor in
            MainActor.assertIsolated()
            self.attempts += 1
            if self.attempts == 1 { throw Flaky(attempt: 1) }
            return "loaded on attempt \(self.attempts)"
        }
    }
}
