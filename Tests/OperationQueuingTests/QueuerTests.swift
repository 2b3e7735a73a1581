import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

/// An operation that records its attempts in a shared log.
private func logging(_ label: String, _ log: AtomicBox<[String]>, succeed: Bool = true) -> ConcurrentOperation {
    ConcurrentOperation(name: label) { operation in
        log.mutate { $0.append(label) }
        operation.success = succeed
    }
}

/// The blocking wait, called from a synchronous context (an async caller would get the `async` overload).
private func blockUntilFinished(_ queuer: Queuer) {
    queuer.waitUntilAllOperationsAreFinished()
}

@Suite("Queuer", .timeLimit(.minutes(1)))
struct QueuerTests {
    @Test("chains run in array order with the completion last; the variadic overload too")
    func chains() {
        let queuer = Queuer(name: "test.chain", maxConcurrentOperationCount: 4)
        let log = AtomicBox<[String]>([])
        let done = DispatchSemaphore(value: 0)
        queuer.addChainedOperations([logging("a", log), logging("b", log), logging("c", log)]) {
            log.mutate { $0.append("done") }
            done.signal()
        }
        #expect(done.wait(timeout: deadline()) == .success)
        #expect(log.value == ["a", "b", "c", "done"])

        log.mutate { $0 = [] }
        queuer.addChainedOperations(logging("x", log), logging("y", log)) {
            log.mutate { $0.append("done") }
            done.signal()
        }
        #expect(done.wait(timeout: deadline()) == .success)
        #expect(log.value == ["x", "y", "done"])
    }

    @Test("an empty chain's completion still runs")
    func emptyChain() {
        let queuer = Queuer(name: "test.empty")
        let done = DispatchSemaphore(value: 0)
        queuer.addChainedOperations([]) { done.signal() }
        #expect(done.wait(timeout: deadline()) == .success)
    }

    @Test("two failing operations in a chain run 0,0,0,1,1,1 then the completion")
    func retriesInChain() {
        let queuer = Queuer(name: "test.retry")
        let log = AtomicBox<[String]>([])
        let done = DispatchSemaphore(value: 0)
        queuer.addChainedOperations([logging("0", log, succeed: false), logging("1", log, succeed: false)]) {
            log.mutate { $0.append("completion") }
            done.signal()
        }
        #expect(done.wait(timeout: deadline()) == .success)
        #expect(log.value == ["0", "0", "0", "1", "1", "1", "completion"])
    }

    @Test("addCompletionHandler runs after every operation added before it, not only the last")
    func completionHandlerWaitsForAll() {
        let queuer = Queuer(name: "test.completion", maxConcurrentOperationCount: 2)
        let release = DispatchSemaphore(value: 0)
        let log = AtomicBox<[String]>([])
        let done = DispatchSemaphore(value: 0)
        queuer.addOperation {
            _ = release.wait(timeout: deadline())
            log.mutate { $0.append("slow") }
        }
        queuer.addOperation { log.mutate { $0.append("quick") } }
        queuer.addCompletionHandler {
            log.mutate { $0.append("completion") }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + .milliseconds(100)) == .timedOut, "the slow operation is still running")
        release.signal()
        #expect(done.wait(timeout: deadline()) == .success)
        #expect(log.value.last == "completion")
        #expect(Set(log.value.dropLast()) == ["slow", "quick"])
    }

    @Test("maxConcurrentOperationCount is respected", arguments: [1, 2, 3])
    func concurrencyLimit(limit: Int) {
        let queuer = Queuer(name: "test.limit", maxConcurrentOperationCount: limit)
        let gauge = ConcurrencyGauge()
        for _ in 0..<12 {
            queuer.addOperation {
                gauge.measure {
                    Thread.sleep(forTimeInterval: 0.005)  // overlap, so that the limit is what stops them
                }
            }
        }
        queuer.waitUntilAllOperationsAreFinished()
        #expect(gauge.peak <= limit)
        #expect(queuer.maxConcurrentOperationCount == limit)
    }

    @Test("a maxConcurrentOperationCount below 1 traps with a message naming the value")
    func invalidLimitTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Queuer(name: "test.invalid", maxConcurrentOperationCount: 0)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("maxConcurrentOperationCount"))
        #expect(stderr.contains("got 0"))
    }

    @Test("pause keeps pending operations from starting; resume starts them and resumes ConcurrentOperations")
    func pauseAndResume() {
        let queuer = Queuer(name: "test.pause")
        queuer.pause()
        #expect(queuer.isExecuting == false)
        let ran = DispatchSemaphore(value: 0)
        let operation = ConcurrentOperation { _ in ran.signal() }
        queuer.addOperation(operation)
        #expect(ran.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
        queuer.pause()
        #expect(operation.isPaused)
        queuer.resume()
        #expect(operation.isPaused == false)
        #expect(ran.wait(timeout: deadline()) == .success)
    }

    @Test("cancelAll cancels queued operations and completion handlers")
    func cancelAll() {
        let queuer = Queuer(name: "test.cancel")
        queuer.pause()
        let ran = AtomicBox(false)
        queuer.addOperation(ConcurrentOperation { _ in ran.mutate { $0 = true } })
        queuer.addCompletionHandler { ran.mutate { $0 = true } }
        queuer.cancelAll()
        queuer.resume()
        queuer.waitUntilAllOperationsAreFinished()
        #expect(ran.value == false)
    }

    @Test("waitUntilAllOperationsAreFinished works synchronously and with await")
    func waits() async {
        let queuer = Queuer(name: "test.wait", maxConcurrentOperationCount: 2)
        let count = AtomicBox(0)
        for _ in 0..<20 { queuer.addOperation { count.mutate { $0 += 1 } } }
        await queuer.waitUntilAllOperationsAreFinished()
        #expect(count.value == 20)
        for _ in 0..<20 { queuer.addOperation { count.mutate { $0 += 1 } } }
        blockUntilFinished(queuer)
        #expect(count.value == 40)
        #expect(queuer.operationCount == 0)
    }
}
