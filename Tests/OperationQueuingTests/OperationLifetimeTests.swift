import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

@Suite("Operation lifetimes", .timeLimit(.minutes(1)))
struct OperationLifetimeTests {
    @Test("a cancelled dependent released before its running dependency finishes is never read after it is freed")
    func cancelledDependentReleased() {
        // Foundation on Linux keeps dependents unretained. The dependent is cancelled, finishes at once, and is let go
        // by its queue and by the test; the dependency then finishes from another thread.
        for _ in 0..<100 {
            let running = DispatchSemaphore(value: 0)
            weak var weakDependent: ConcurrentOperation?
            let operation = ConcurrentOperation { _ in running.signal() }
            operation.manualFinish = true
            do {
                let queuer = Queuer(name: "test.lifetime.dependent")
                let dependent = ConcurrentOperation { _ in }
                weakDependent = dependent
                queuer.addChainedOperations([operation, dependent])
                #expect(running.wait(timeout: deadline()) == .success)
                dependent.cancel()
                #expect(eventually { dependent.isFinished })
            }
            let finished = DispatchSemaphore(value: 0)
            onNewThread {
                operation.finish()
                finished.signal()
            }
            #expect(finished.wait(timeout: deadline()) == .success)
            operation.waitUntilFinished()
            #expect(eventually { weakDependent == nil }, "the dependent is let go once its dependency has finished")
        }
    }
}
