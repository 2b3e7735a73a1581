import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

private struct Flaky: Error, Equatable {
    let attempt: Int
}

@Suite("AsyncOperation and Queuer.run", .timeLimit(.minutes(1)))
struct AsyncOperationTests {
    @Test("an attempt ends when the async body returns: success, one attempt, no error")
    func returns() async {
        let queuer = Queuer(name: "test.async.returns")
        let resumed = AtomicBox(false)
        let operation = AsyncOperation { _ in
            try await Task.sleep(for: .milliseconds(5))
            resumed.mutate { $0 = true }
        }
        queuer.addOperation(operation)
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(operation.isFinished)
        #expect(resumed.value, "the operation did not finish before its body returned")
        #expect(operation.success)
        #expect(operation.currentAttempt == 1)
        #expect(operation.error == nil)
        #expect(operation.manualFinish)
    }

    @Test("a thrown error fails the attempt, is retried, and is readable on the operation")
    func throwsAndRetries() async {
        let queuer = Queuer(name: "test.async.throws")
        let failing = AsyncOperation { operation in throw Flaky(attempt: operation.currentAttempt) }
        failing.maximumRetries = 3
        let recovering = AsyncOperation { operation in
            if operation.currentAttempt == 1 { throw Flaky(attempt: 1) }
        }
        recovering.retryPolicy = .constant(.milliseconds(5))
        queuer.addOperation(failing)
        queuer.addOperation(recovering)
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(failing.currentAttempt == 3)
        #expect(failing.success == false)
        #expect(failing.error as? Flaky == Flaky(attempt: 3), "the last attempt's error")
        #expect(recovering.currentAttempt == 2)
        #expect(recovering.success)
        #expect(recovering.error == nil, "cleared by the attempt that returned")
    }

    @Test("async operations count against the queue's limit until their bodies return")
    func respectTheLimit() async {
        let queuer = Queuer(name: "test.async.limit", maxConcurrentOperationCount: 2)
        let gauge = AsyncGauge()
        for _ in 0..<8 {
            queuer.addOperation {
                await gauge.enter()
                try await Task.sleep(for: .milliseconds(2))
                await gauge.leave()
            }
        }
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(await gauge.peak <= 2)
        #expect(await gauge.total == 8)
    }

    @Test("cancel() cancels the running body's task: the operation finishes at once, unsuccessfully, no retry")
    func cancelCancelsTheBody() async {
        let queuer = Queuer(name: "test.async.cancel")
        let started = CountingSemaphore()
        let operation = AsyncOperation { _ in
            started.signal()
            try await Task.sleep(for: .seconds(3600))
        }
        operation.maximumRetries = 5
        queuer.addOperation(operation)
        try? await started.wait()
        operation.cancel()
        #expect(await suspendUntil { operation.isFinished }, "finished long before the sleep's end")
        #expect(operation.error is CancellationError)
        #expect(operation.success == false)
        #expect(operation.currentAttempt == 1)
    }

    @Test(
        "cancel() reaches a retry's task after earlier attempts ended without suspending",
        arguments: [RetryPolicy.immediate, .constant(.milliseconds(1))]
    )
    func cancelReachesTheRetry(policy: RetryPolicy) async {
        // The first two bodies throw before any await, so each ends before its task is even recorded; the task
        // that cancel() must find is the third's.
        let queuer = Queuer(name: "test.async.cancelretry")
        let third = CountingSemaphore()
        let operation = AsyncOperation { operation in
            if operation.currentAttempt < 3 { throw Flaky(attempt: operation.currentAttempt) }
            third.signal()
            try await Task.sleep(for: .seconds(3600))
        }
        operation.maximumRetries = 5
        operation.retryPolicy = policy
        queuer.addOperation(operation)
        #expect(await third.wait(timeout: patienceLimit), "the third attempt did not start")
        operation.cancel()
        #expect(await suspendUntil { operation.isFinished }, "finished long before the sleep's end")
        #expect(operation.error is CancellationError)
        #expect(operation.currentAttempt == 3)
    }

    @Test("cancelling at any moment, before or during the body, always lets the queue drain")
    func cancelRaces() async {
        let queuer = Queuer(name: "test.async.cancelraces")
        let flag = SpinFlag()
        for round in 0..<200 {
            let operation = AsyncOperation { _ in try await Task.sleep(for: .seconds(3600)) }
            queuer.addOperation(operation)
            for _ in 0..<(round % 50) * 20 { flag.pause() }
            operation.cancel()
        }
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(queuer.queue.operations.allSatisfy { $0.isFinished })
        // Foundation drops a finished operation from its queue after it has woken the operation's dependents (and
        // so the wait above): the count reaches 0 a moment later.
        #expect(await suspendUntil { queuer.operationCount == 0 })
    }

    @Test("Queuer.addOperation takes an async body, and a sync closure still picks the sync overload")
    func addOperationOverloads() async {
        let queuer = Queuer(name: "test.async.add")
        let log = AtomicBox<[String]>([])
        queuer.pause()
        queuer.addOperation { log.mutate { $0.append("sync") } }
        queuer.addOperation {
            try await Task.sleep(for: .milliseconds(1))
            log.mutate { $0.append("async") }
        }
        let kinds = queuer.operations.map { String(describing: type(of: $0)) }
        #expect(kinds == ["BlockOperation", "AsyncOperation"])
        queuer.resume()
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(log.value.sorted() == ["async", "sync"])
    }

    @Test("Queuer.run returns the body's value and rethrows its error")
    func runReturnsAndThrows() async throws {
        let queuer = Queuer(name: "test.run")
        #expect(try await queuer.run { 6 * 7 } == 42)
        let optional: Int? = try await queuer.run { nil }
        #expect(optional == nil)
        await #expect(throws: Flaky(attempt: 1)) {
            try await queuer.run { () async throws -> Int in throw Flaky(attempt: 1) }
        }
    }

    @Test("Queuer.run keeps to the queue's concurrency limit")
    func runKeepsTheLimit() async throws {
        let queuer = Queuer(name: "test.run.limit", maxConcurrentOperationCount: 2)
        let gauge = AsyncGauge()
        let sum = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 1...8 {
                group.addTask {
                    try await queuer.run {
                        await gauge.enter()
                        try await Task.sleep(for: .milliseconds(2))
                        await gauge.leave()
                        return index
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(sum == 36)
        #expect(await gauge.peak <= 2)
    }

    @Test("cancelling the task awaiting Queuer.run before the body starts: it never runs, CancellationError")
    func runCancelledBeforeStart() async {
        let queuer = Queuer(name: "test.run.cancelbefore")
        queuer.pause()
        let ran = AtomicBox(false)
        let caller = Task { try await queuer.run { ran.mutate { $0 = true } } }
        #expect(await suspendUntil { queuer.operationCount == 1 })
        caller.cancel()
        queuer.resume()
        let callerEnded = await completes { await #expect(throws: CancellationError.self) { try await caller.value } }
        #expect(callerEnded)
        #expect(ran.value == false)
    }

    @Test("cancelling the task awaiting Queuer.run while the body runs cancels the body")
    func runCancelledWhileRunning() async {
        let queuer = Queuer(name: "test.run.cancelduring")
        let started = CountingSemaphore()
        let caller = Task {
            try await queuer.run {
                started.signal()
                try await Task.sleep(for: .seconds(3600))
            }
        }
        try? await started.wait()
        caller.cancel()
        let callerEnded = await completes { await #expect(throws: CancellationError.self) { try await caller.value } }
        #expect(callerEnded)
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
    }

    @Test("an async body that calls finish traps with a message: only returning or throwing ends its attempt")
    func finishFromTheBodyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queuer = Queuer(name: "test.async.finish")
            let operation = AsyncOperation(name: "finisher") { operation in
                operation.finish(success: true)
                try await Task.sleep(for: .milliseconds(50))
            }
            queuer.addOperation(operation)
            // The trap ends the process first; a wait that came back instead ends it normally, failing the test.
            _ = await completes { await queuer.waitUntilAllOperationsAreFinished() }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("AsyncOperation 'finisher': finish was called"))
        #expect(stderr.contains("returns"))
    }

    @Test("manualFinish = false on an async operation traps with a message naming it, the value and the rule")
    func manualFinishFalseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = AsyncOperation(name: "fetch") { _ in }
            operation.manualFinish = false
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("AsyncOperation 'fetch': manualFinish is always true"))
        #expect(stderr.contains("returns or throws"))
        #expect(stderr.contains("cannot be set to false"))
    }

    @Test("manualFinish = true on an async operation is what it is already: no trap")
    func manualFinishTrueIsAccepted() {
        let operation = AsyncOperation(name: "fetch") { _ in }
        operation.manualFinish = true
        #expect(operation.manualFinish)
    }

    @Test("an async operation releases itself and its body once it has finished")
    func releasedAfterwards() async {
        weak var weakOperation: AsyncOperation?
        do {
            let queuer = Queuer(name: "test.async.release")
            let operation = AsyncOperation { _ in await Task.yield() }
            weakOperation = operation
            queuer.addOperation(operation)
            #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        }
        #expect(await suspendUntil { weakOperation == nil })
    }
}

/// Counts bodies inside a section at once, from async code.
private actor AsyncGauge {
    private var inside = 0
    private(set) var peak = 0
    private(set) var total = 0

    func enter() {
        self.inside += 1
        self.total += 1
        self.peak = max(self.peak, self.inside)
    }

    func leave() {
        self.inside -= 1
    }
}

/// Queuer.run and async operations from a @MainActor type: compile-time checks that the API fits an app target.
@MainActor
private final class ScreenModel {
    var total = 0
    let queuer = Queuer(name: "screen", maxConcurrentOperationCount: 2)

    func load() async throws {
        self.total = try await self.queuer.run { 20 } + self.queuer.run { 22 }
        self.queuer.addOperation { try await Task.sleep(for: .milliseconds(1)) }
        await self.queuer.waitUntilAllOperationsAreFinished()
    }
}

@Suite("OperationQueuing isolation", .timeLimit(.minutes(1)))
struct OperationQueuingIsolationTests {
    @Test("Queuer.run and async operations work from @MainActor and from nonisolated code")
    @MainActor
    func isolations() async throws {
        let model = ScreenModel()
        // load() ends in an untimed wait: the model checks that it compiles from @MainActor.
        #expect(try await completes { try await model.load() })
        #expect(model.total == 42)
        let detached = Task.detached { try await Queuer(name: "plain").run { "nonisolated" } }
        let value = AtomicBox("")
        #expect(
            try await completes {
                let returned = try await detached.value
                value.mutate { $0 = returned }
            }
        )
        #expect(value.value == "nonisolated")
    }
}
