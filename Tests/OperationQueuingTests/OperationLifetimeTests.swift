import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

@Suite("Operation lifetimes", .timeLimit(.minutes(1)))
struct OperationLifetimeTests {
    @Test("a cancelled dependent released before its running dependency finishes is never read after it is freed")
    func cancelledDependentReleased() async throws {
        try await offPoolTest { checks in
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
                    checks.expect(running.wait(timeout: deadline()) == .success)
                    dependent.cancel()
                    checks.expect(eventually { dependent.isFinished })
                }
                let finished = DispatchSemaphore(value: 0)
                onNewThread {
                    operation.finish()
                    finished.signal()
                }
                checks.expect(finished.wait(timeout: deadline()) == .success)
                operation.waitUntilFinished()
                checks.expect(
                    eventually { weakDependent == nil },
                    "the dependent is let go once its dependency has finished"
                )
            }
        }
    }

    @Test("a ConcurrentOperation cancelled and released while its BlockOperation dependency runs is never read after")
    func cancelledDependentOfBlockOperationReleased() async {
        // Foundation keeps the dependent unretained in the BlockOperation and walks it when that one finishes; the
        // dependent takes itself off that list as it finishes, so any kind of dependency is safe.
        await #expect(processExitsWith: .success) {
            await offPool {
                let queue = OperationQueue()
                for _ in 0..<400 {
                    let running = DispatchSemaphore(value: 0)
                    let release = DispatchSemaphore(value: 0)
                    let dependency = BlockOperation {
                        running.signal()
                        hold(until: release)
                    }
                    weak var weakDependent: ConcurrentOperation?
                    do {
                        let dependent = ConcurrentOperation { _ in }
                        weakDependent = dependent
                        dependent.addDependency(dependency)
                        queue.addOperation(dependency)
                        queue.addOperation(dependent)
                        _ = running.wait(timeout: deadline())
                        dependent.cancel()
                        _ = eventually { dependent.isFinished }
                    }
                    _ = eventually { weakDependent == nil }
                    release.signal()
                    dependency.waitUntilFinished()
                }
            }
        }
    }

    @Test("two operations that depend on each other's order but are never queued are both freed when dropped")
    func neverQueuedDependencyFreed() {
        weak var weakFirst: ConcurrentOperation?
        weak var weakSecond: ConcurrentOperation?
        do {
            let first = ConcurrentOperation { _ in }
            let second = ConcurrentOperation { _ in }
            second.addDependency(first)
            weakFirst = first
            weakSecond = second
        }
        #expect(weakFirst == nil && weakSecond == nil, "a dependency that never ran keeps its dependent, or back")
    }

    @Test("Queuers and operations released mid-flight, in every state, are all freed and never read after")
    func releaseWhileRunning() async {
        // Each round drops the Queuer and every reference at once, while one operation waits for a finish that
        // another thread sends, one waits out a retry delay, one is an async body, and some are cancelled.
        let references = AtomicBox<[WeakOperation]>([])
        for round in 0..<300 {
            let gate = DispatchSemaphore(value: 0)
            do {
                let queuer = Queuer(name: "test.lifetime.release.\(round)")
                let manual = ConcurrentOperation { operation in
                    let attempt = operation.currentAttempt
                    onNewThread {
                        hold(until: gate)
                        operation.finish(attempt: attempt, success: true)
                    }
                }
                manual.manualFinish = true
                let delayed = ConcurrentOperation { operation in operation.success = operation.currentAttempt == 2 }
                delayed.retryPolicy = .constant(.milliseconds(1))
                let body = AsyncOperation { _ in try await Task.sleep(for: .milliseconds(1)) }
                let last = ConcurrentOperation { _ in }
                let all = [manual, delayed, body, last]
                references.mutate { $0 += all.map(WeakOperation.init) }
                queuer.addChainedOperations(all)
                switch round % 4 {
                case 0: delayed.cancel()
                case 1: queuer.cancelAll()
                case 2: body.cancel()
                default: break
                }
            }
            gate.signal()
        }
        // Under a sanitizer, beside other suites, the last retries and bodies take a while. The test suspends between
        // looks, so that the async bodies it waits for can run.
        let limit = deadline()
        var freed = false
        while !freed, DispatchTime.now() < limit, !Task.isCancelled {  // a cancelled sleep would spin
            freed = references.value.allSatisfy { $0.operation == nil }
            if !freed { try? await Task.sleep(for: .milliseconds(1)) }
        }
        let alive = references.value.compactMap(\.operation).map { operation in
            let concurrent = operation as? ConcurrentOperation
            return "\(type(of: operation)) finished \(operation.isFinished) cancelled \(operation.isCancelled) "
                + "attempt \(concurrent?.currentAttempt ?? 0) waiting \(concurrent?.isWaitingForRetry ?? false)"
        }
        #expect(freed, "every operation is freed; still alive: \(alive)")
    }
}

/// A weak reference to an operation, to see that it was freed.
private struct WeakOperation: @unchecked Sendable {
    // Safety: only read and written inside an AtomicBox.
    weak var operation: Operation?

    init(_ operation: Operation) {
        self.operation = operation
    }
}
