import Dispatch
import OperationQueuing
import TestSupport
import Testing

@Suite("GroupOperation", .timeLimit(.minutes(1)))
struct GroupOperationTests {
    @Test("runs its operations concurrently, then the handler, then finishes before its dependents start")
    func group() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.group", maxConcurrentOperationCount: 1)
            let log = AtomicBox<[String]>([])
            let a = DispatchSemaphore(value: 0)
            let b = DispatchSemaphore(value: 0)
            // Each waits for the other: only possible if they run at the same time.
            let first = ConcurrentOperation { operation in
                a.signal()
                operation.success = b.wait(timeout: deadline()) == .success
            }
            let second = ConcurrentOperation { operation in
                b.signal()
                operation.success = a.wait(timeout: deadline()) == .success
            }
            let group = GroupOperation([first, second]) { log.mutate { $0.append("handler") } }
            let after = ConcurrentOperation { _ in log.mutate { $0.append("dependent") } }
            queuer.addChainedOperations(group, after)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(group.allOperationsSucceeded)
            checks.expect(group.success)
            checks.expect(log.value == ["handler", "dependent"])
            checks.expect(group.operations.count == 2)
        }
    }

    @Test("allOperationsSucceeded is false when one operation failed")
    func failure() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.group.failure")
            let failing = ConcurrentOperation { operation in operation.success = false }
            failing.maximumRetries = 1
            let group = GroupOperation([ConcurrentOperation { _ in }, failing])
            queuer.addOperation(group)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(group.isFinished)
            checks.expect(group.allOperationsSucceeded == false)
        }
    }

    @Test("a group makes exactly one attempt: a failed group is not retried")
    func oneAttempt() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.group.oneattempt")
            let runs = AtomicBox(0)
            let failing = ConcurrentOperation { operation in
                runs.mutate { $0 += 1 }
                operation.success = false
            }
            failing.maximumRetries = 1
            let group = GroupOperation([failing])
            checks.expect(group.maximumRetries == 1)
            checks.expect(group.manualRetry == false)
            checks.expect(group.manualFinish)
            queuer.addOperation(group)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(group.isFinished)
            checks.expect(group.currentAttempt == 1)
            checks.expect(group.success == false)
            checks.expect(runs.value == 1)
        }
    }

    @Test("cancelling a group cancels its operations, and the group still finishes")
    func cancelGroup() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.group.cancel")
            queuer.pause()
            let ran = AtomicBox(false)
            let inner = ConcurrentOperation { _ in ran.mutate { $0 = true } }
            let group = GroupOperation([inner])
            queuer.addOperation(group)
            group.cancel()
            queuer.resume()
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(inner.isCancelled)
            checks.expect(group.isFinished)
            checks.expect(ran.value == false)
        }
    }

    @Test("a group cancelled before its operations ran did not succeed, nor did they")
    func cancelledGroupDidNotSucceed() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.group.cancelledoutcome")
            queuer.pause()
            let first = ConcurrentOperation { _ in }
            let second = ConcurrentOperation { _ in }
            let group = GroupOperation([first, second])
            queuer.addOperation(group)
            group.cancel()
            queuer.resume()
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(group.isFinished)
            checks.expect(group.allOperationsSucceeded == false)
            checks.expect(group.success == false)
            checks.expect(first.success == false && second.success == false)
        }
    }

    @Test("an operation listed twice in a group traps in init with a message naming the rule")
    func listedTwice() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = ConcurrentOperation(name: "dup") { _ in }
            _ = GroupOperation([operation, operation])
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("GroupOperation: the operation at index 1 ('dup') is listed twice"))
    }

    @Test("an operation already queued handed to a group traps in init with a message naming it")
    func alreadyQueued() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queuer = Queuer(name: "test.group.queued")
            queuer.pause()
            let operation = ConcurrentOperation(name: "queued") { _ in }
            queuer.addOperation(operation)
            _ = GroupOperation([operation])
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("'queued' was already added to Queuer 'test.group.queued' (addOperation)"))
    }

    @Test(
        "a setting a group cannot honour traps with a message naming the group, the value and the rule",
        arguments: ["maximumRetries = 5", "manualRetry = true", "manualFinish = false"]
    )
    func settingsAGroupCannotHonourTrap(setting: String) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [setting] in
            let group = GroupOperation([ConcurrentOperation { _ in }])
            group.name = "thumbnails"
            switch setting {
            case "maximumRetries = 5": group.maximumRetries = 5
            case "manualRetry = true": group.manualRetry = true
            default: group.manualFinish = false
            }
        }
        let stderr = text(result?.standardErrorContent)
        switch setting {
        case "maximumRetries = 5":
            #expect(stderr.contains("GroupOperation 'thumbnails': maximumRetries is always 1"))
            #expect(stderr.contains("one attempt"))
            #expect(stderr.contains("cannot be set to 5"))
        case "manualRetry = true":
            #expect(stderr.contains("GroupOperation 'thumbnails': manualRetry is always false"))
            #expect(stderr.contains("cannot be set to true"))
        default:
            #expect(stderr.contains("GroupOperation 'thumbnails': manualFinish is always true"))
            #expect(stderr.contains("cannot be set to false"))
        }
    }

    @Test("the values a group has already are accepted: maximumRetries 0 or 1, manualRetry false, manualFinish true")
    func settingsAGroupHonours() {
        let group = GroupOperation([ConcurrentOperation { _ in }])
        group.maximumRetries = 1
        group.maximumRetries = 0
        group.manualRetry = false
        group.manualFinish = true
        #expect(group.maximumRetries == 1)
        #expect(group.manualRetry == false)
        #expect(group.manualFinish)
    }
}
