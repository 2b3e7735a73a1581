import Dispatch
import OperationQueuing
import TestSupport
import Testing

@Suite("GroupOperation", .timeLimit(.minutes(1)))
struct GroupOperationTests {
    @Test("runs its operations concurrently, then the handler, then finishes before its dependents start")
    func group() {
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
        #expect(group.allOperationsSucceeded)
        #expect(group.success)
        #expect(log.value == ["handler", "dependent"])
        #expect(group.operations.count == 2)
    }

    @Test("allOperationsSucceeded is false when one operation failed")
    func failure() {
        let queuer = Queuer(name: "test.group.failure")
        let failing = ConcurrentOperation { operation in operation.success = false }
        failing.maximumRetries = 1
        let group = GroupOperation([ConcurrentOperation { _ in }, failing])
        queuer.addOperation(group)
        queuer.waitUntilAllOperationsAreFinished()
        #expect(group.isFinished)
        #expect(group.allOperationsSucceeded == false)
    }
}
