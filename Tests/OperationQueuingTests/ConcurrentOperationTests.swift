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
    func attempts(maximum: Int, expected: Int) async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.attempts")
            let attempts = AtomicBox<[Int]>([])
            let operation = ConcurrentOperation { operation in
                attempts.mutate { $0.append(operation.currentAttempt) }
                operation.success = false
            }
            operation.maximumRetries = maximum
            queuer.addOperation(operation)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(attempts.value == Array(1...expected))
            checks.expect(operation.isFinished)
            checks.expect(operation.success == false)
        }
    }

    @Test("an operation that succeeds stops retrying")
    func successStopsRetries() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.success")
            let operation = ConcurrentOperation { operation in operation.success = operation.currentAttempt == 2 }
            queuer.addOperation(operation)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(operation.currentAttempt == 2)
            checks.expect(operation.success)
        }
    }

    @Test("manual retry: one attempt per retry(), never on the caller's thread; extra calls do nothing")
    func manualRetry() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.manualretry")
            let attempted = DispatchSemaphore(value: 0)
            let gate = DispatchSemaphore(value: 0)
            let threads = AtomicBox<[UInt]>([])
            let operation = ConcurrentOperation { operation in
                threads.mutate { $0.append(currentThreadID()) }
                attempted.signal()
                hold(until: gate)  // held open, so that retry() can be called while it runs
                operation.success = false
            }
            operation.manualRetry = true
            operation.maximumRetries = 3
            queuer.addOperation(operation)
            for attempt in 1...3 {
                checks.expect(attempted.wait(timeout: deadline()) == .success)
                operation.retry()  // while the attempt runs: nothing
                checks.expect(operation.currentAttempt == attempt)
                gate.signal()
                if attempt < 3 {
                    // Once the failed attempt waits, one retry() starts exactly one more.
                    checks.expect(
                        eventually {
                            operation.retry()
                            return operation.currentAttempt == attempt + 1
                        }
                    )
                }
            }
            queuer.waitUntilAllOperationsAreFinished()
            operation.retry()  // after the limit and after finishing: nothing
            checks.expect(operation.currentAttempt == 3)
            checks.expect(threads.value.count == 3)
            checks.expect(
                !threads.value.dropFirst().contains(currentThreadID()),
                "retried attempts never run on the caller"
            )
            checks.expect(operation.isFinished)
        }
    }

    @Test("manual finish: not finished until finish(success:) is called from another thread; twice does nothing more")
    func manualFinish() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.manualfinish")
            let started = DispatchSemaphore(value: 0)
            let operation = ConcurrentOperation { _ in started.signal() }
            operation.manualFinish = true
            queuer.addOperation(operation)
            checks.expect(started.wait(timeout: deadline()) == .success)
            let finished = DispatchSemaphore(value: 0)
            onNewThread {
                queuer.waitUntilAllOperationsAreFinished()
                finished.signal()
            }
            checks.expect(finished.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
            checks.expect(operation.isFinished == false)
            onNewThread {
                operation.finish(success: true)
                operation.finish(success: false)  // a second call does nothing more
            }
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(operation.isFinished)
            checks.expect(operation.success)
        }
    }

    @Test("waiting for a manual finish uses no CPU (measured in a process of its own)")
    func manualFinishUsesNoCPU() async {
        // In a child process nothing else runs, so its CPU time is this operation's alone. A spinning wait (as in
        // Queuer) would burn about 300 ms of CPU in these 300 ms.
        await #expect(processExitsWith: .success) {
            // The body blocks (syncs, waits): on a thread of its own, not on the exit test's task.
            await offPool {
                let queuer = Queuer(name: "test.manualfinish.cpu")
                let started = DispatchSemaphore(value: 0)
                let operation = ConcurrentOperation { _ in started.signal() }
                operation.manualFinish = true
                queuer.addOperation(operation)
                guard started.wait(timeout: deadline()) == .success else { exit(2) }
                let before = processCPUTime()
                _ = CountingSemaphore().wait(.now() + .milliseconds(300))  // 300 ms in which nothing should run
                let used = processCPUTime() - before
                guard !operation.isFinished, used < 100_000_000 else { exit(3) }
                operation.finish()
                queuer.waitUntilAllOperationsAreFinished()
                exit(operation.isFinished ? 0 : 4)
            }
        }
    }

    @Test("an operation cancelled before it starts never runs its block, and finishes")
    func cancelledBeforeStart() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.cancelled")
            let ran = AtomicBox(false)
            let operation = ConcurrentOperation { _ in ran.mutate { $0 = true } }
            operation.cancel()
            queuer.addOperation(operation)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(ran.value == false)
            checks.expect(operation.isFinished)
        }
    }

    @Test("an operation without a block finishes at once and does not hold a slot")
    func noBlock() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.noblock", maxConcurrentOperationCount: 1)
            let empty = ConcurrentOperation()
            let ran = DispatchSemaphore(value: 0)
            queuer.addOperation(empty)
            queuer.addOperation { ran.signal() }
            checks.expect(ran.wait(timeout: deadline()) == .success)
            checks.expect(empty.isFinished)
        }
    }

    @Test("an operation that cancels itself while running does not stop its chain")
    func selfCancelKeepsChain() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.selfcancel")
            let done = DispatchSemaphore(value: 0)
            let first = ConcurrentOperation { operation in operation.cancel() }
            let second = ConcurrentOperation { _ in done.signal() }
            queuer.addChainedOperations(first, second)
            checks.expect(done.wait(timeout: deadline()) == .success)
        }
    }

    @Test("a subclass overriding execute() is run, and addToQueue adds it")
    func subclass() async throws {
        try await offPoolTest { checks in
            final class Doubler: ConcurrentOperation, @unchecked Sendable {
                let result = AtomicBox(0)
                override func execute() { self.result.mutate { $0 = 21 * 2 } }
            }
            let queuer = Queuer(name: "test.subclass")
            let operation = Doubler()
            operation.addToQueue(queuer)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(operation.result.value == 42)
        }
    }
}

@Suite("ConcurrentOperation: races and misuse", .timeLimit(.minutes(1)))
struct ConcurrentOperationRaceTests {
    @Test(
        "finish(success: false) from another thread while the block runs never overlaps attempts",
        arguments: [false, true]
    )
    func finishWhileBlockRuns(manualFinish: Bool) async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.finishwhilerunning")
            let gauge = ConcurrencyGauge()
            let attempts = AtomicBox<[Int]>([])
            let finishThreads = AtomicBox<[UInt]>([])
            let attemptThreads = AtomicBox<[UInt]>([])
            let completed = DispatchSemaphore(value: 0)
            let insideAtCompletion = AtomicBox(-1)
            let operation = ConcurrentOperation { operation in
                gauge.measure {
                    attempts.mutate { $0.append(operation.currentAttempt) }
                    attemptThreads.mutate { $0.append(currentThreadID()) }
                    // Another thread ends this attempt while the block still runs, and waits for finish to return.
                    let finishReturned = DispatchSemaphore(value: 0)
                    onNewThread {
                        finishThreads.mutate { $0.append(currentThreadID()) }
                        operation.finish(success: false)
                        finishReturned.signal()
                    }
                    checks.expect(
                        finishReturned.wait(timeout: deadline()) == .success,
                        "finish must not run the next attempt"
                    )
                }
            }
            operation.manualFinish = manualFinish
            operation.maximumRetries = 3
            operation.completionBlock = {
                insideAtCompletion.mutate { $0 = gauge.peak > 1 ? 99 : 0 }
                completed.signal()
            }
            queuer.addOperation(operation)
            checks.expect(completed.wait(timeout: deadline()) == .success)
            checks.expect(attempts.value == [1, 2, 3])
            checks.expect(gauge.peak == 1, "attempts of one operation never overlap")
            checks.expect(insideAtCompletion.value == 0)
            checks.expect(
                Set(attemptThreads.value).isDisjoint(with: finishThreads.value),
                "no attempt ran on finish's thread"
            )
            checks.expect(operation.success == false)
        }
    }

    @Test("a second finish for the same attempt, or one between attempts, is ignored")
    func staleFinish() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.stalefinish")
            let attempts = AtomicBox(0)
            let operation = ConcurrentOperation { operation in
                attempts.mutate { $0 += 1 }
                operation.finish(success: false)
                operation.finish(success: true)  // the same attempt: ignored
            }
            operation.manualFinish = true
            operation.maximumRetries = 2
            queuer.addOperation(operation)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(attempts.value == 2)
            checks.expect(operation.success == false)
            operation.finish(success: true)  // after the operation finished: ignored
            checks.expect(operation.success == false)
        }
    }

    @Test("automatic retry is a loop: 200,000 attempts run in constant stack (in a process of its own)")
    func manyRetries() async {
        await #expect(processExitsWith: .success) {
            let queuer = Queuer(name: "test.manyretries")
            let attempts = AtomicBox(0)
            let operation = ConcurrentOperation { operation in
                attempts.mutate { $0 += 1 }
                operation.success = false
            }
            operation.maximumRetries = 200_000
            queuer.addOperation(operation)
            let finished = await completes { await queuer.waitUntilAllOperationsAreFinished() }
            exit(finished && attempts.value == 200_000 && operation.currentAttempt == 200_000 ? 0 : 3)
        }
    }

    @Test("cancelling an operation that waits for retry() finishes it; a later retry() does nothing")
    func cancelWhileWaitingForRetry() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.cancelwaiting")
            let attempts = AtomicBox(0)
            let operation = ConcurrentOperation { operation in
                attempts.mutate { $0 += 1 }
                operation.success = false
            }
            operation.manualRetry = true
            queuer.addOperation(operation)
            checks.expect(eventually { operation.isWaitingForRetry })
            operation.cancel()
            let drained = DispatchSemaphore(value: 0)
            onNewThread {
                queuer.waitUntilAllOperationsAreFinished()
                drained.signal()
            }
            checks.expect(drained.wait(timeout: deadline()) == .success, "the queue drains")
            checks.expect(operation.isFinished)
            checks.expect(!operation.isExecuting)
            checks.expect(!operation.isWaitingForRetry)
            checks.expect(operation.success == false)
            operation.retry()
            checks.expect(attempts.value == 1)
            checks.expect(operation.currentAttempt == 1)
        }
    }

    @Test("cancelling between automatic attempts stops the retries")
    func cancelBetweenAttempts() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.cancelbetween")
            let attempts = AtomicBox(0)
            let operation = ConcurrentOperation { operation in
                attempts.mutate { $0 += 1 }
                operation.cancel()
                operation.success = false
            }
            operation.maximumRetries = 5
            queuer.addOperation(operation)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(attempts.value == 1)
            checks.expect(operation.isFinished)
        }
    }

    @Test("retry() on an operation whose Queuer is paused starts the attempt only at resume()")
    func retryWhilePaused() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.retrypaused")
            let attempted = DispatchSemaphore(value: 0)
            let operation = ConcurrentOperation { operation in
                operation.success = operation.currentAttempt == 2
                attempted.signal()
            }
            operation.manualRetry = true
            queuer.addOperation(operation)
            checks.expect(attempted.wait(timeout: deadline()) == .success)
            checks.expect(eventually { operation.isWaitingForRetry })
            queuer.pause()
            operation.retry()
            checks.expect(attempted.wait(timeout: .now() + .milliseconds(200)) == .timedOut, "no attempt while paused")
            checks.expect(operation.currentAttempt == 1)
            queuer.resume()
            checks.expect(attempted.wait(timeout: deadline()) == .success)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(operation.currentAttempt == 2)
            checks.expect(operation.success)
        }
    }

    @Test("a negative maximumRetries traps with a message naming the operation, the value and the rule")
    func negativeMaximumRetries() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = ConcurrentOperation(name: "upload") { _ in }
            operation.maximumRetries = -5
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("ConcurrentOperation 'upload'"))
        #expect(stderr.contains("maximumRetries"))
        #expect(stderr.contains("-5"))
    }

    @Test("the same operation twice in a chain traps with a message naming the rule")
    func chainDuplicate() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = ConcurrentOperation(name: "twice") { _ in }
            Queuer(name: "test.chaindup").addChainedOperations(operation, operation)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("Queuer 'test.chaindup' (addChainedOperations): the operation at index 1 ('twice')"))
    }

    @Test("an operation added to a Queuer twice traps with a message naming it")
    func addedTwice() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queuer = Queuer(name: "test.addtwice")
            queuer.pause()
            let operation = ConcurrentOperation(name: "again") { _ in }
            queuer.addOperation(operation)
            queuer.addOperation(operation)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains(
                "Queuer 'test.addtwice' (addOperation): ConcurrentOperation 'again' was already added by an earlier "
                    + "call of the same method; an operation runs once"
            ),
            "\(stderr)"
        )
        #expect(!stderr.contains("to Queuer 'test.addtwice'"), "the Queuer is named once: \(stderr)")
    }

    @Test("a second add names the first Queuer by the name it was made with, after it was renamed or released")
    func addedAfterFirstQueuerWentAway() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = ConcurrentOperation(name: "fetch") { _ in }
            do {
                let downloads = Queuer(name: "downloads")
                downloads.pause()
                downloads.addOperation(operation)
                downloads.queue.name = "renamed"
            }
            Queuer(name: "uploads").addOperation(operation)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains(
                "Queuer 'uploads' (addOperation): ConcurrentOperation 'fetch' was already added to Queuer 'downloads' "
                    + "(addOperation); an operation runs once"
            ),
            "\(stderr)"
        )
    }

    @Test("an operation added to a second Queuer traps with a message naming both Queuers and the operation")
    func addedToTwoQueuers() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let downloads = Queuer(name: "downloads")
            downloads.pause()
            let operation = ConcurrentOperation(name: "fetch") { _ in }
            downloads.addChainedOperations([operation])
            Queuer(name: "uploads").addOperation(operation)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains(
                "Queuer 'uploads' (addOperation): ConcurrentOperation 'fetch' was already added to Queuer 'downloads' "
                    + "(addChainedOperations)"
            )
        )
    }

    @Test("RetryingOperations' UploadOperation example: a failed upload is retried, and the operation waits for it")
    func uploadOperationExample() async throws {
        try await offPoolTest { checks in
            /// A stand-in for the article's `client`: fails the first upload, calling back on another thread.
            final class FlakyClient: Sendable {
                let uploads = AtomicBox(0)

                func upload(_ file: String, completion: @escaping @Sendable ((any Error)?) -> Void) {
                    let attempt = self.uploads.mutate { count -> Int in
                        count += 1
                        return count
                    }
                    onNewThread { completion(attempt == 1 ? CancellationError() : nil) }
                }
            }
            // The article's subclass, with its `client` and `file` made concrete.
            final class UploadOperation: ConcurrentOperation, @unchecked Sendable {
                let client = FlakyClient()
                let file = "report.pdf"

                override init(
                    name: String? = "upload",
                    executionBlock: (@Sendable (ConcurrentOperation) -> Void)? = nil
                ) {
                    super.init(name: name, executionBlock: executionBlock)
                    self.manualFinish = true
                    self.maximumRetries = 3
                }

                override func execute() {
                    client.upload(file) { error in self.finish(success: error == nil) }
                }
            }
            let queuer = Queuer(name: "test.docs.upload")
            let upload = UploadOperation()
            queuer.addOperation(upload)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(upload.client.uploads.value == 2, "the failed first upload was retried once")
            checks.expect(upload.currentAttempt == 2)
            checks.expect(upload.success)
        }
    }
}

@Suite("ConcurrentOperation: attempts, cancellation and outcomes", .timeLimit(.minutes(1)))
struct ConcurrentOperationAttemptTests {
    @Test("a late, duplicate finish meant for attempt 1 does not end attempt 2")
    func lateFinishFromEarlierAttempt() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.latefinish")
            let secondStarted = DispatchSemaphore(value: 0)
            let operation = ConcurrentOperation { operation in
                let attempt = operation.currentAttempt
                if attempt == 1 {
                    operation.finish(attempt: attempt, success: false)
                } else {
                    secondStarted.signal()
                }
            }
            operation.manualFinish = true
            operation.maximumRetries = 2
            let finished = DispatchSemaphore(value: 0)
            operation.completionBlock = { finished.signal() }
            queuer.addOperation(operation)
            checks.expect(secondStarted.wait(timeout: deadline()) == .success)
            // Attempt 1's callback fires again, late, while attempt 2 waits for its own finish.
            operation.finish(attempt: 1, success: false)
            checks.expect(
                finished.wait(timeout: .now() + .milliseconds(100)) == .timedOut,
                "attempt 1's finish ended attempt 2"
            )
            checks.expect(!operation.isFinished)
            operation.finish(attempt: 2, success: true)
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(operation.success)
            checks.expect(operation.currentAttempt == 2)
        }
    }

    @Test("an operation that never ran is not successful, also once cancelled and finished")
    func neverRanIsNotSuccessful() async throws {
        try await offPoolTest { checks in
            let idle = ConcurrentOperation { _ in }
            checks.expect(idle.success == false)
            let queuer = Queuer(name: "test.neverran")
            let cancelled = ConcurrentOperation { _ in }
            cancelled.cancel()
            queuer.addOperation(cancelled)
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(cancelled.isFinished)
            checks.expect(cancelled.success == false)
        }
    }

    @Test(
        "an operation cancelled while it waits for a dependency never runs its block, though its queue starts it at once"
    )
    func cancelledWhileWaitingNeverRuns() async throws {
        // Foundation makes a cancelled operation ready at once, and its queue may call start() on a worker thread
        // before cancel() has returned: the operation must count as cancelled by then.
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.cancelwaiting")
            let ran = AtomicBox<[String]>([])
            for round in 0..<1_000 {
                let release = DispatchSemaphore(value: 0)
                let dependency = BlockOperation { hold(until: release) }
                let waiting: [ConcurrentOperation] = (0..<4).map { index in
                    let name = "round \(round), operation \(index)"
                    let operation: ConcurrentOperation =
                        index.isMultiple(of: 2)
                        ? ConcurrentOperation(name: name) { _ in ran.mutate { $0.append(name) } }
                        : AsyncOperation(name: name) { _ in ran.mutate { $0.append(name) } }
                    operation.addDependency(dependency)
                    return operation
                }
                queuer.addOperation(dependency)
                for operation in waiting { queuer.addOperation(operation) }
                for operation in waiting { operation.cancel() }
                checks.expect(eventually { waiting.allSatisfy(\.isFinished) })
                release.signal()
                checks.expect(eventually { queuer.operationCount == 0 })
            }
            checks.expect(ran.value == [], "cancelled before they started, these ran their blocks")
        }
    }

    @Test(
        "a cancel that races the end of a failed attempt is never lost: the operation finishes at once",
        arguments: [true, false]
    )
    func cancelRacesFailedAttempt(manualRetry: Bool) async throws {
        try await offPoolTest { checks in
            // Another thread cancels just as the failing block returns; the operation must finish — with manual retry it
            // would otherwise wait for a retry() forever, with automatic retry for an hour. Four racing pairs on two
            // cores, so that threads are also preempted at the worst moment.
            let stuck = AtomicBox(0)
            let ran = runOnThreads(4) { index in
                let flag = SpinFlag()
                let queuer = Queuer(name: "test.cancelrace.\(index)")
                for round in 1...1_500 {
                    let operation = ConcurrentOperation { operation in
                        operation.success = false
                        flag.set(round)
                        // cancel() takes a while to reach the state lock: sweep where it lands around the return.
                        for _ in 0..<(round % 128) * 2 { flag.pause() }
                    }
                    operation.manualRetry = manualRetry
                    operation.retryPolicy = .constant(.seconds(3_600))
                    let finished = DispatchSemaphore(value: 0)
                    operation.completionBlock = { finished.signal() }
                    onNewThread {
                        guard flag.spin(until: round) else { return }
                        operation.cancel()
                    }
                    queuer.addOperation(operation)
                    guard finished.wait(timeout: deadline()) == .success else {
                        stuck.mutate { $0 += 1 }
                        return
                    }
                    checks.expect(operation.success == false)
                }
            }
            checks.expect(ran)
            checks.expect(stuck.value == 0, "an operation cancelled as its attempt failed never finished")
        }
    }

    @Test("a cancel during a long retry delay finishes the operation at once and lets it go")
    func cancelDuringRetryDelay() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.canceldelay")
            let failed = DispatchSemaphore(value: 0)
            weak var weakOperation: ConcurrentOperation?
            do {
                let operation = ConcurrentOperation { operation in
                    operation.success = false
                    failed.signal()
                }
                operation.retryPolicy = .constant(.seconds(3_600))
                weakOperation = operation
                queuer.addOperation(operation)
                checks.expect(failed.wait(timeout: deadline()) == .success)
                operation.cancel()
                // The block signals before its attempt has ended: the cancel may come just before the end, and the
                // operation then finishes as the attempt ends, on the attempt's thread.
                checks.expect(eventually { operation.isFinished }, "finished by cancel(), not at the end of the delay")
                checks.expect(operation.success == false)
                checks.expect(operation.currentAttempt == 1)
            }
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(
                eventually { weakOperation == nil },
                "the pending delay does not keep the cancelled operation"
            )
        }
    }
}
