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

@Suite("Operation retries: shouldRetry, maximumAttempts, retryClock and jitter seeds", .timeLimit(.minutes(1)))
struct OperationRetryTests {
    @Test("an AsyncOperation whose error the filter refuses finishes at once, failed, with that error")
    func asyncRefusedError() async {
        let queuer = Queuer(name: "test.retry.async.refused")
        let asked = AtomicBox<[Int]>([])
        let operation = AsyncOperation { operation in
            if operation.currentAttempt == 1 { throw Flaky(attempt: 1) }
            throw Fatal()
        }
        operation.maximumAttempts = 5
        operation.shouldRetry = { error, attempt in
            asked.mutate { $0.append(attempt) }
            return error is Flaky
        }
        queuer.addOperation(operation)
        #expect(await completes { await queuer.waitForAll() })
        #expect(operation.currentAttempt == 2, "Flaky retried, Fatal not")
        #expect(asked.value == [1, 2])
        #expect(operation.success == false)
        #expect(operation.error is Fatal)
        #expect(operation.isFinished)
    }

    @Test("the filter is not asked after the last attempt, nor for an attempt that returned")
    func filterAskedOnlyBeforeARetry() async {
        let queuer = Queuer(name: "test.retry.async.last")
        let asked = AtomicBox<[Int]>([])
        let failing = AsyncOperation { operation in throw Flaky(attempt: operation.currentAttempt) }
        failing.maximumAttempts = 3
        failing.shouldRetry = { _, attempt in
            asked.mutate { $0.append(attempt) }
            return true
        }
        let succeeding = AsyncOperation { _ in }
        succeeding.shouldRetry = { _, _ in
            Issue.record("asked about an attempt that returned")
            return true
        }
        queuer.addOperation(failing)
        queuer.addOperation(succeeding)
        #expect(await completes { await queuer.waitForAll() })
        #expect(asked.value == [1, 2])
        #expect(failing.currentAttempt == 3)
        #expect(failing.error as? Flaky == Flaky(attempt: 3))
        #expect(succeeding.success)
    }

    @Test("a ConcurrentOperation's finish(throwing:) goes to the filter and to error; success = false does not")
    func concurrentOperationErrors() async {
        let queuer = Queuer(name: "test.retry.concurrent")
        let refused = ConcurrentOperation { operation in operation.finish(throwing: Fatal()) }
        refused.shouldRetry = { error, _ in !(error is Fatal) }
        let asked = AtomicBox(0)
        let errorless = ConcurrentOperation { operation in operation.success = false }
        errorless.shouldRetry = { _, _ in
            asked.mutate { $0 += 1 }
            return false
        }
        let recovering = ConcurrentOperation { operation in
            if operation.currentAttempt == 1 {
                operation.finish(throwing: Flaky(attempt: 1))
            } else {
                operation.finish(success: true)
            }
        }
        recovering.manualFinish = true
        recovering.shouldRetry = { error, attempt in (error as? Flaky)?.attempt == attempt }
        for operation in [refused, errorless, recovering] { queuer.addOperation(operation) }
        #expect(await completes { await queuer.waitForAll() })
        #expect(refused.currentAttempt == 1)
        #expect(refused.success == false)
        #expect(refused.error is Fatal)
        #expect(errorless.currentAttempt == 3, "a failure without an error is retried as before")
        #expect(asked.value == 0, "and does not ask the filter")
        #expect(errorless.error == nil)
        #expect(recovering.currentAttempt == 2)
        #expect(recovering.success)
        #expect(recovering.error == nil, "cleared by the attempt that succeeded")
    }

    @Test("an attempt that ends when its block returns, without a finish, clears the error")
    func errorClearedByAnAttemptWithoutFinish() async {
        let queuer = Queuer(name: "test.retry.concurrent.clear")
        let operation = ConcurrentOperation { operation in
            if operation.currentAttempt == 1 { operation.finish(throwing: Flaky(attempt: 1)) }
        }
        queuer.addOperation(operation)
        #expect(await completes { await queuer.waitForAll() })
        #expect(operation.currentAttempt == 2)
        #expect(operation.success)
        #expect(operation.error == nil)
    }

    @Test("with manualRetry, a refused error finishes the operation instead of waiting for retry()")
    func manualRetryRefused() async {
        let queuer = Queuer(name: "test.retry.manual")
        let operation = AsyncOperation { _ in throw Fatal() }
        operation.manualRetry = true
        operation.shouldRetry = { _, _ in false }
        queuer.addOperation(operation)
        #expect(await suspendUntil { operation.isFinished }, "finished without a retry()")
        #expect(operation.isWaitingForRetry == false)
        #expect(operation.error is Fatal)
    }

    @Test("finish(attempt:throwing:) for an attempt that is not running does nothing")
    func staleFinishThrowing() async {
        let queuer = Queuer(name: "test.retry.stale")
        // A flag, not the operation: the block keeps it, and an operation kept there would keep itself.
        let late = AtomicBox(false)
        let operation = ConcurrentOperation { operation in
            if operation.currentAttempt == 1 {
                operation.finish(attempt: 1, success: false)
            } else {
                operation.finish(attempt: 1, throwing: Fatal())  // late, for attempt 1: ignored
                late.mutate { $0 = true }
                operation.finish(attempt: 2, success: true)
            }
        }
        operation.manualFinish = true
        operation.shouldRetry = { _, _ in false }
        queuer.addOperation(operation)
        #expect(await completes { await queuer.waitForAll() })
        #expect(late.value)
        #expect(operation.currentAttempt == 2)
        #expect(operation.success)
        #expect(operation.error == nil)
    }

    @Test("maximumAttempts and maximumRetries are one number; maximumRetries 0 reads as 1 attempt")
    func maximumAttemptsIsMaximumRetries() async {
        let operation = ConcurrentOperation { _ in }
        #expect(operation.maximumAttempts == 3)
        operation.maximumAttempts = 5
        #expect(operation.maximumRetries == 5)
        operation.maximumRetries = 0
        #expect(operation.maximumAttempts == 1)
        let queuer = Queuer(name: "test.retry.attempts")
        let failing = AsyncOperation { _ in throw Fatal() }
        failing.maximumAttempts = 4
        queuer.addOperation(failing)
        #expect(await completes { await queuer.waitForAll() })
        #expect(failing.currentAttempt == 4)
        let group = GroupOperation([])
        #expect(group.maximumAttempts == 1)
        group.maximumAttempts = 1
    }

    @Test(
        "maximumAttempts below 1, or above 1 on a group, traps naming the type, the value and the rule",
        arguments: 0..<4
    )
    func maximumAttemptsTraps(index: Int) async {
        let expected = [
            "ConcurrentOperation 'upload': maximumAttempts is the number of attempts in all, the first included, and "
                + "must be 1 or more, not 0",
            "AsyncOperation 'fetch': maximumAttempts is the number of attempts in all, the first included, and "
                + "must be 1 or more, not -1",
            "GroupOperation 'thumbnails': maximumAttempts is always 1, since a group makes exactly one attempt",
            "GroupOperation 'thumbnails': maximumAttempts is always 1",
        ][index]
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [index] in
            switch index {
            case 0: ConcurrentOperation(name: "upload").maximumAttempts = 0
            case 1: AsyncOperation(name: "fetch") { _ in }.maximumAttempts = -1
            case 2:
                let group = GroupOperation([])
                group.name = "thumbnails"
                group.maximumAttempts = 2
            default:
                let group = GroupOperation([])
                group.name = "thumbnails"
                group.maximumAttempts = 0
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains(expected))
    }

    @Test("retry delays pass on retryClock: the next attempt starts when the test moves the clock, not before")
    func retryClock() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retry.clock")
        let operation = AsyncOperation { operation in
            if operation.currentAttempt < 3 { throw Flaky(attempt: operation.currentAttempt) }
        }
        operation.retryPolicy = .exponential(initial: .seconds(1_800), maximum: .seconds(3_600))
        operation.retryClock = clock
        let started = ContinuousClock.now
        queuer.addOperation(operation)
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        #expect(clock.deadlines.map(\.offset) == [.seconds(1_800)])
        clock.advance(by: .seconds(1_800) - .nanoseconds(1))
        #expect(operation.currentAttempt == 1, "not a nanosecond early")
        clock.advance(by: .nanoseconds(1))
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        #expect(operation.currentAttempt == 2)
        #expect(clock.deadlines.map(\.offset) == [.seconds(5_400)], "then an hour")
        clock.advance(by: .seconds(3_600))
        #expect(await completes { await queuer.waitForAll() })
        let wall = started.duration(to: .now)
        #expect(operation.currentAttempt == 3)
        #expect(operation.success)
        #expect(wall * 10 <= .seconds(5_400), "90 minutes of delays took \(wall)")
        print("AsyncOperation retry delays: 90 minutes on the test clock took \(wall) of real time")
    }

    @Test("an attempt after a delay runs on a dispatch queue, not in the task that waited on the clock")
    func attemptAfterADelayRunsOutsideTasks() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retry.clock.thread")
        let inTask = AtomicBox<[Bool]>([])
        let operation = ConcurrentOperation { operation in
            inTask.mutate { $0.append(withUnsafeCurrentTask { $0 != nil }) }
            operation.success = operation.currentAttempt == 2
        }
        operation.retryPolicy = .constant(.seconds(1))
        operation.retryClock = clock
        queuer.addOperation(operation)
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        clock.advance(by: .seconds(1))
        #expect(await completes { await queuer.waitForAll() })
        #expect(inTask.value == [false, false])
    }

    @Test("a cancel during a retry delay finishes the operation and ends the clock's wait at once; nothing is kept")
    func cancelEndsTheWait() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retry.clock.cancel")
        weak var weakOperation: AsyncOperation?
        do {
            let operation = AsyncOperation { _ in throw Flaky(attempt: 1) }
            operation.retryPolicy = .constant(.seconds(3_600))
            operation.retryClock = clock
            weakOperation = operation
            queuer.addOperation(operation)
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            operation.cancel()
            #expect(operation.isFinished, "finished inside cancel()")
            #expect(operation.currentAttempt == 1)
        }
        #expect(await suspendUntil { clock.deadlines.isEmpty }, "the wait left the clock")
        #expect(clock.now.offset == .zero)
        #expect(await completes { await queuer.waitForAll() })
        #expect(await suspendUntil { weakOperation == nil }, "nothing keeps the cancelled operation")
    }

    @Test("the same retryJitterSeed gives the same delays, the policy's for that seed")
    func seededDelays() async throws {
        let policy = RetryPolicy.exponential(initial: .seconds(2), maximum: .seconds(100), jitter: 0.8)
        func delays(seed: UInt64) async throws -> [Duration] {
            let clock = TestClock()
            let queuer = Queuer(name: "test.retry.seed")
            let operation = ConcurrentOperation { operation in operation.success = false }
            operation.maximumAttempts = 5
            operation.retryPolicy = policy
            operation.retryClock = clock
            operation.retryJitterSeed = seed
            queuer.addOperation(operation)
            var delays: [Duration] = []
            for _ in 1...4 {
                try await clock.waitForSleepers(1, timeout: patienceLimit)
                let delay = clock.now.duration(to: clock.deadlines[0])
                delays.append(delay)
                clock.advance(by: delay)
            }
            #expect(await completes { await queuer.waitForAll() })
            return delays
        }
        let first = try await delays(seed: 99)
        #expect(try await delays(seed: 99) == first)
        #expect(try await delays(seed: 100) != first)
        #expect(first == (1...4).map { policy.delay(beforeRetry: $0, jitterSeed: 99) })
    }
}
