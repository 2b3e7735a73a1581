import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The CPU time this process has used, in nanoseconds.
private func processCPUTime() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

@Suite("ConcurrentOperation", .timeLimit(.minutes(1)))
struct ConcurrentOperationTests {
    @Test(
        "maximumRetries is the total number of attempts, and 0 behaves as 1",
        arguments: [(0, 1), (1, 1), (3, 3), (5, 5)]
    )
    func attempts(maximum: Int, expected: Int) {
        let queuer = Queuer(name: "test.attempts")
        let attempts = AtomicBox<[Int]>([])
        let operation = ConcurrentOperation { operation in
            attempts.mutate { $0.append(operation.currentAttempt) }
            operation.success = false
        }
        operation.maximumRetries = maximum
        queuer.addOperation(operation)
        queuer.waitUntilAllOperationsAreFinished()
        #expect(attempts.value == Array(1...expected))
        #expect(operation.isFinished)
        #expect(operation.success == false)
    }

    @Test("an operation that succeeds stops retrying")
    func successStopsRetries() {
        let queuer = Queuer(name: "test.success")
        let operation = ConcurrentOperation { operation in operation.success = operation.currentAttempt == 2 }
        queuer.addOperation(operation)
        queuer.waitUntilAllOperationsAreFinished()
        #expect(operation.currentAttempt == 2)
        #expect(operation.success)
    }

    @Test("manual retry: one attempt per retry(), never on the caller's thread; extra calls do nothing")
    func manualRetry() {
        let queuer = Queuer(name: "test.manualretry")
        let attempted = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let threads = AtomicBox<[UInt]>([])
        let operation = ConcurrentOperation { operation in
            threads.mutate { $0.append(currentThreadID()) }
            attempted.signal()
            _ = gate.wait(timeout: deadline())  // held open, so that retry() can be called while it runs
            operation.success = false
        }
        operation.manualRetry = true
        operation.maximumRetries = 3
        queuer.addOperation(operation)
        for attempt in 1...3 {
            #expect(attempted.wait(timeout: deadline()) == .success)
            operation.retry()  // while the attempt runs: nothing
            #expect(operation.currentAttempt == attempt)
            gate.signal()
            if attempt < 3 {
                // Once the failed attempt waits, one retry() starts exactly one more.
                #expect(
                    eventually {
                        operation.retry()
                        return operation.currentAttempt == attempt + 1
                    }
                )
            }
        }
        queuer.waitUntilAllOperationsAreFinished()
        operation.retry()  // after the limit and after finishing: nothing
        #expect(operation.currentAttempt == 3)
        #expect(threads.value.count == 3)
        #expect(!threads.value.dropFirst().contains(currentThreadID()), "retried attempts never run on the caller")
        #expect(operation.isFinished)
    }

    @Test("manual finish: not finished until finish(success:) is called from another thread; twice does nothing more")
    func manualFinish() {
        let queuer = Queuer(name: "test.manualfinish")
        let started = DispatchSemaphore(value: 0)
        let operation = ConcurrentOperation { _ in started.signal() }
        operation.manualFinish = true
        queuer.addOperation(operation)
        #expect(started.wait(timeout: deadline()) == .success)
        let finished = DispatchSemaphore(value: 0)
        onNewThread {
            queuer.waitUntilAllOperationsAreFinished()
            finished.signal()
        }
        #expect(finished.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
        #expect(operation.isFinished == false)
        onNewThread {
            operation.finish(success: true)
            operation.finish(success: false)  // a second call does nothing more
        }
        #expect(finished.wait(timeout: deadline()) == .success)
        #expect(operation.isFinished)
        #expect(operation.success)
    }

    @Test("waiting for a manual finish uses no CPU (measured in a process of its own)")
    func manualFinishUsesNoCPU() async {
        // In a child process nothing else runs, so its CPU time is this operation's alone. A spinning wait (as in
        // Queuer) would burn about 300 ms of CPU in these 300 ms.
        await #expect(processExitsWith: .success) {
            let queuer = Queuer(name: "test.manualfinish.cpu")
            let started = DispatchSemaphore(value: 0)
            let operation = ConcurrentOperation { _ in started.signal() }
            operation.manualFinish = true
            queuer.addOperation(operation)
            guard started.wait(timeout: .now() + 10) == .success else { exit(2) }
            let before = processCPUTime()
            _ = CountingSemaphore().wait(.now() + .milliseconds(300))  // 300 ms in which nothing should run
            let used = processCPUTime() - before
            guard !operation.isFinished, used < 100_000_000 else { exit(3) }
            operation.finish()
            queuer.waitUntilAllOperationsAreFinished()
            exit(operation.isFinished ? 0 : 4)
        }
    }

    @Test("an operation cancelled before it starts never runs its block, and finishes")
    func cancelledBeforeStart() {
        let queuer = Queuer(name: "test.cancelled")
        let ran = AtomicBox(false)
        let operation = ConcurrentOperation { _ in ran.mutate { $0 = true } }
        operation.cancel()
        queuer.addOperation(operation)
        queuer.waitUntilAllOperationsAreFinished()
        #expect(ran.value == false)
        #expect(operation.isFinished)
    }

    @Test("an operation without a block finishes at once and does not hold a slot")
    func noBlock() {
        let queuer = Queuer(name: "test.noblock", maxConcurrentOperationCount: 1)
        let empty = ConcurrentOperation()
        let ran = DispatchSemaphore(value: 0)
        queuer.addOperation(empty)
        queuer.addOperation { ran.signal() }
        #expect(ran.wait(timeout: deadline()) == .success)
        #expect(empty.isFinished)
    }

    @Test("an operation that cancels itself while running does not stop its chain")
    func selfCancelKeepsChain() {
        let queuer = Queuer(name: "test.selfcancel")
        let done = DispatchSemaphore(value: 0)
        let first = ConcurrentOperation { operation in operation.cancel() }
        let second = ConcurrentOperation { _ in done.signal() }
        queuer.addChainedOperations(first, second)
        #expect(done.wait(timeout: deadline()) == .success)
    }

    @Test("a subclass overriding execute() is run, and addToQueue adds it")
    func subclass() {
        final class Doubler: ConcurrentOperation, @unchecked Sendable {
            let result = AtomicBox(0)
            override func execute() { self.result.mutate { $0 = 21 * 2 } }
        }
        let queuer = Queuer(name: "test.subclass")
        let operation = Doubler()
        operation.addToQueue(queuer)
        queuer.waitUntilAllOperationsAreFinished()
        #expect(operation.result.value == 42)
    }
}
