import CallbackRouting
import Dispatch
import DispatchKit
import Foundation
import OperationQueuing
import SafeValueCore
import TestSupport
import Testing

/// "Every internal lock order a type can take is taken", under the lock-order checker.
///
/// Every ordered pair of each stateful type's public operations runs on one instance, from two threads at once,
/// releasing the instance among them (``OperationPairs``). The checker reports only the orders some run takes; this
/// is the run that takes them.
///
/// Each table lists the operations a user can call on a shared instance. An operation that would wait for something
/// only another call gives (a semaphore's plain `wait`, a queue's `suspend` alone) is written with its bound (a timed
/// wait, `suspend` then `resume`), so that every pair ends on its own.
@Suite(
    "Contract properties: every pair of operations on one instance, on two threads",
    .serialized,
    .timeLimit(.minutes(3)),  // past one pair's patience, so that a stuck pair is named
    .enabled(if: LockOrderChecking.mode != .off, "the lock-order checker is off")
)
struct OperationPairTests {
    /// Runs `table` off the cooperative pool and records its failures.
    private func check<Subject>(_ table: PairTable<Subject>) async {
        // One round of each pair: the orders of a pair's calls are taken in any round, and schedule chaos and the
        // soak's factor (CONCURRENCYKIT_PROPERTY_ROUNDS) add the rounds that vary their races.
        let rounds = PropertyRun.rounds(1)
        let failures = await offPool { OperationPairs.run(table, rounds: rounds) }
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
    }

    @Test("the machine finds an inversion that only two calls on two threads take, and names the pair")
    func findsAnInversionOfTwoCalls() async {
        let failures = await offPool {
            OperationPairs.run(
                PairTable(
                    "TwoLocks",
                    make: { TwoLocks() },
                    operations: [
                        // Both under one gate, so that the test never deadlocks; the checker still sees both orders.
                        .sync("first, then second") { locks in
                            locks.gate.withLock { locks.first.withLock { locks.second.withLock {} } }
                        },
                        .sync("second, then first") { locks in
                            locks.gate.withLock { locks.second.withLock { locks.first.withLock {} } }
                        },
                    ]
                ),
                rounds: 1
            )
        }
        // Each ordered pair of the two makes its own report, on its own instance.
        let pairs = failures.compactMap { $0.components(separatedBy: ": lock-order report").first }
        #expect(
            pairs.sorted() == [
                "TwoLocks: first, then second against second, then first",
                "TwoLocks: second, then first against first, then second",
            ],
            "\(failures)"
        )
        #expect(failures.allSatisfy { $0.contains("\"pairs.two.first\"") }, "\(failures)")
    }

    @Test("AtomicPrimitives: MutexLock, AtomicBox, @Locked, CountingSemaphore")
    func atomicPrimitives() async {
        await self.check(
            PairTable(
                "MutexLock",
                make: { MutexLock(name: "pairs.mutex") },
                operations: [
                    .sync("withLock") { $0.withLock {} },
                    .sync("lock, unlock") { lock in
                        lock.lock()
                        lock.unlock()
                    },
                    .sync("tryLock") { lock in if lock.tryLock() { lock.unlock() } },
                ]
            )
        )
        await self.check(
            PairTable(
                "AtomicBox",
                make: { AtomicBox(0, name: "pairs.box") },
                operations: [
                    .sync("value") { _ = $0.value },
                    .sync("mutate") { $0.mutate { $0 += 1 } },
                    .sync("isMutating") { _ = $0.isMutating },
                ]
            )
        )
        await self.check(
            PairTable(
                "@Locked",
                make: { LockedHolder() },
                operations: [
                    .sync("read") { _ = $0.count },
                    .sync("projected mutate") { $0.$count.mutate { $0 += 1 } },
                ]
            )
        )
        await self.check(
            PairTable(
                "CountingSemaphore",
                make: { CountingSemaphore(resources: 1) },
                operations: [
                    // Each operation gives back what it takes, as users of a semaphore of resources do.
                    .sync("signal, then wait") { semaphore in
                        semaphore.signal()
                        semaphore.wait()
                    },
                    .sync("timed wait") { semaphore in
                        if semaphore.wait(.now() + .milliseconds(2)) == .success { semaphore.signal() }
                    },
                    .sync("try-wait") { semaphore in if semaphore.wait(.now()) == .success { semaphore.signal() } },
                    .sync("perform") { $0.perform {} },
                    .async("async timed wait") { semaphore in
                        if await semaphore.wait(timeout: .milliseconds(2)) { semaphore.signal() }
                    },
                    .async("withPermit") { _ = try? await $0.withPermit {} },
                ]
            )
        )
    }

    @Test("SafeValueCore: QueueSafeValue's commands of every schedule")
    func queueSafeValue() async {
        let queue = DispatchQueue(label: "pairs.value.queue")
        await self.check(
            PairTable(
                "QueueSafeValue",
                make: { QueueSafeValue(value: 0) },
                operations: [
                    .sync("wait get") { _ = $0.wait.lowestPriority.get() },
                    .sync("wait set, highest") { $0.wait.highestPriority.set(newValue: 1) },
                    .sync("wait manual set, done from another thread") { value in
                        value.wait.lowestPriority.set(manualCompletion: { number, done in
                            number += 1
                            DispatchQueue.global().async(execute: done)
                        })
                    },
                    .sync("async set") { $0.async(performIn: queue).lowestPriority.set(newValue: 2) },
                    .sync("async manual get, done later") { value in
                        value.async(performIn: queue).highestPriority.get(manualCompletion: { _, done in
                            DispatchQueue.global().async(execute: done)
                        })
                    },
                    .async("suspend get") { _ = await $0.suspend.lowestPriority.get() },
                    .async("suspend set") { _ = await $0.suspend.highestPriority.set(newValue: 3) },
                ]
            )
        )
    }

    @Test("OperationQueuing: Queuer, with a RetryBudget")
    func queuer() async {
        await self.check(
            PairTable(
                "Queuer",
                make: { Queuer(name: "pairs.queuer", maxConcurrentOperationCount: 2) },
                operations: [
                    .sync("addOperation block") { $0.addOperation {} },
                    .sync("addOperation async body") { $0.addOperation { () async throws -> Void in } },
                    .sync("addOperation ConcurrentOperation") { $0.addOperation(ConcurrentOperation { _ in }) },
                    .sync("addChainedOperations") { queuer in
                        queuer.addChainedOperations([ConcurrentOperation { _ in }, ConcurrentOperation { _ in }]) {}
                    },
                    .sync("addCompletionHandler") { $0.addCompletionHandler {} },
                    .sync("cancelAll") { $0.cancelAll() },
                    .sync("pause, resume") { queuer in
                        queuer.pause()
                        queuer.resume()
                    },
                    .sync("maxConcurrentOperationCount") { $0.maxConcurrentOperationCount = 1 },
                    .sync("operationCount") { _ = $0.operationCount },
                    .async("run") { _ = try? await $0.run { 1 } },
                    .async("run retrying, with a budget") { queuer in
                        let retries = RetryConfiguration(maximumAttempts: 2, policy: .immediate, budget: pairBudget)
                        _ = try? await queuer.run(retrying: retries) { () -> Int in throw PairFailure() }
                    },
                    .async("waitForAll") { await $0.waitForAll() },
                    .sync("the budget's balance") { _ in _ = pairBudget.availableRetries },
                ],
                tearDown: { $0.resume() }
            )
        )
    }

    @Test("OperationQueuing: ConcurrentOperation, AsyncOperation, GroupOperation, Scheduler")
    func operations() async {
        let host = Queuer(name: "pairs.operations")
        await self.check(
            PairTable(
                "ConcurrentOperation",
                // Not manual-finish: an attempt that no pair finishes would keep the operation, and its queue, alive
                // until the process exits, which LeakSanitizer reports. `finish` still races the attempt's own end.
                make: {
                    let operation = ConcurrentOperation { _ in }
                    operation.manualRetry = true
                    operation.maximumAttempts = 3
                    host.addOperation(operation)
                    return operation
                },
                operations: [
                    .sync("cancel") { $0.cancel() },
                    .sync("finish, failed") { $0.finish(success: false) },
                    .sync("finish attempt 1") { $0.finish(attempt: 1) },
                    .sync("finish throwing") { $0.finish(throwing: PairFailure()) },
                    .sync("retry") { $0.retry() },
                    .sync("pause, resume") { operation in
                        operation.pause()
                        operation.resume()
                    },
                    .sync("state") { operation in
                        _ = (operation.isFinished, operation.isExecuting, operation.currentAttempt, operation.success)
                    },
                ],
                tearDown: { $0.cancel() }
            )
        )
        await self.check(
            PairTable(
                "AsyncOperation",
                make: {
                    let operation = AsyncOperation { _ in await Task.yield() }
                    operation.maximumAttempts = 2
                    host.addOperation(operation)
                    return operation
                },
                operations: [
                    .sync("cancel") { $0.cancel() },
                    .sync("pause, resume") { operation in
                        operation.pause()
                        operation.resume()
                    },
                    .sync("state") { operation in
                        _ = (operation.isFinished, operation.isExecuting, operation.currentAttempt, operation.error)
                    },
                ],
                tearDown: { $0.cancel() }
            )
        )
        await self.check(
            PairTable(
                "GroupOperation",
                make: {
                    let children = (0..<2).map { _ in ConcurrentOperation { _ in } }
                    let group = GroupOperation(children) {}
                    host.addOperation(group)
                    return GroupUnderTest(group: group, children: children)
                },
                operations: [
                    .sync("cancel") { $0.group.cancel() },
                    .sync("finish the children") { test in for child in test.children { child.finish() } },
                    .sync("cancel a child") { $0.children[0].cancel() },
                    .sync("state") { test in _ = (test.group.isFinished, test.group.allOperationsSucceeded) },
                ],
                tearDown: { test in
                    test.group.cancel()
                    for child in test.children { child.cancel() }
                }
            )
        )
        await self.check(
            PairTable(
                "Scheduler",
                make: { Scheduler(after: .milliseconds(1), repeating: .milliseconds(1)) },
                operations: [
                    .sync("setHandler") { $0.setHandler {} },
                    .sync("cancel") { $0.cancel() },
                ],
                tearDown: { $0.cancel() }
            )
        )
    }

    @Test("DispatchKit: GCDQueue, serial and concurrent")
    func gcdQueue() async {
        for kind in [GCDQueue.Kind.serial, .concurrent] {
            await self.check(
                PairTable(
                    "GCDQueue (\(kind))",
                    make: { QueueUnderTest(queue: GCDQueue(name: "pairs.queue", kind: kind)) },
                    operations: [
                        .sync("async") { $0.queue.async {} },
                        .sync("sync") { $0.queue.sync {} },
                        .sync("barrierSync") { $0.queue.barrierSync {} },
                        .sync("barrierAsync") { $0.queue.barrierAsync {} },
                        .sync("suspend, resume") { test in
                            test.queue.suspend()
                            test.queue.resume()
                        },
                        .sync("after") { $0.queue.after(0.001) {} },
                        .sync("iterate") { $0.queue.iterate(4) { _ in } },
                        .sync("state") { test in _ = (test.queue.isSuspended, test.queue.isCurrent) },
                    ]
                )
            )
        }
    }

    @Test("DispatchKit: GCDGroup, GCDTask, GCDTimer, OnceDispatcher")
    func dispatchKit() async {
        let queue = GCDQueue(name: "pairs.dispatch", kind: .concurrent)
        await self.check(
            PairTable(
                "GCDGroup",
                make: { GCDGroup(queue: queue) },
                operations: [
                    .sync("async") { $0.async {} },
                    .sync("enter, leave later") { group in
                        group.enter()
                        DispatchQueue.global().async { group.leave() }
                    },
                    .sync("notify") { $0.notify {} },
                    .sync("timed wait") { _ = $0.wait(timeout: .now() + .milliseconds(2)) },
                    .async("async wait") { await $0.wait() },
                ]
            )
        )
        await self.check(
            PairTable(
                "GCDTask",
                make: { GCDTask(queue: queue) {} },
                operations: [
                    .sync("async") { _ = $0.async() },
                    .sync("sync") { $0.sync() },
                    .sync("cancel") { $0.cancel() },
                    .sync("isCancelled") { _ = $0.isCancelled },
                    .sync("chain") { _ = $0.chain {} },
                ]
            )
        )
        let timerQueue = GCDQueue(name: "pairs.timer")
        await self.check(
            PairTable(
                "GCDTimer",
                make: { GCDTimer(queue: timerQueue, interval: 0.001) },
                operations: [
                    .sync("handler") { $0.handler {} },
                    .sync("startHandler") { $0.startHandler {} },
                    .sync("cancelHandler") { $0.cancelHandler {} },
                    .sync("start") { $0.start() },
                    .sync("pause") { $0.pause() },
                    .sync("stop") { $0.stop() },
                    .sync("settings") { timer in
                        timer.repeatInterval = 0.002
                        timer.toleranceDuration = .milliseconds(1)
                        _ = (timer.isRunning, timer.repeatDuration, timer.tolerance)
                    },
                    .async("iterate ticks, cancelled") { timer in
                        let iteration = Task { for await _ in timer.ticks {} }
                        iteration.cancel()
                        await iteration.value
                    },
                ],
                tearDown: { $0.stop() }
            )
        )
        await self.check(
            PairTable(
                "OnceDispatcher",
                make: { OnceDispatcher() },
                operations: [
                    .sync("call") { once in once {} },
                    .sync("call, slow") { once in once { Thread.sleep(forTimeInterval: 0.000_1) } },
                ]
            )
        )
    }

    @Test("CallbackRouting: CallbackSubject and its subscriptions")
    func callbackSubject() async {
        let queue = DispatchQueue(label: "pairs.subject.queue")
        await self.check(
            PairTable(
                "CallbackSubject",
                make: {
                    let test = SubjectUnderTest()
                    test.subscribe(on: .untouch)
                    test.subscribe(on: .dispatch(queue))
                    return test
                },
                operations: [
                    .sync("subscribe, inline") { $0.subscribe(on: .untouch) },
                    .sync("subscribe, on a queue") { $0.subscribe(on: .dispatch(queue)) },
                    .sync("send") { $0.subject.send(1) },
                    .sync("send completion") { $0.subject.send(completion: .finished) },
                    .sync("cancel a subscription") { $0.subscriptions.value.first?.cancel() },
                    .sync("release the subscriptions") { test in
                        // Taken out under the box's lock, released after it.
                        _ = test.subscriptions.mutate { list in
                            defer { list = [] }
                            return list
                        }
                    },
                    .sync("subscriberCount") { _ = $0.subject.subscriberCount },
                    .async("iterate values, cancelled") { test in
                        let iteration = Task { [values = test.subject.values] in for await _ in values {} }
                        iteration.cancel()
                        await iteration.value
                    },
                ]
            )
        )
    }
}

private struct PairFailure: Error {}

/// The budget the Queuer table's retrying calls share.
private let pairBudget = RetryBudget(retriesPerCall: 0.5, capacity: 4)

/// A type with an inversion between two of its operations, for the machine's own test.
private final class TwoLocks: Sendable {
    let gate = MutexLock(name: "pairs.two.gate")
    let first = MutexLock(name: "pairs.two.first")
    let second = MutexLock(name: "pairs.two.second")
}

/// An instance of a type with `@Locked` state.
private final class LockedHolder: @unchecked Sendable {
    // Safety: `count`'s wrapper is never reassigned (its value is get-only); its state is its own AtomicBox.
    @Locked(name: "pairs.locked") var count = 0
}

/// A queue, as an instance whose release drops the queue.
private final class QueueUnderTest: Sendable {
    let queue: GCDQueue
    init(queue: GCDQueue) { self.queue = queue }
}

/// A group and its children, released together.
private final class GroupUnderTest: Sendable {
    let group: GroupOperation
    let children: [ConcurrentOperation]
    init(group: GroupOperation, children: [ConcurrentOperation]) {
        self.group = group
        self.children = children
    }
}

/// A subject and the subscriptions the test keeps; a callback reads the subject again, as a subscriber may.
private final class SubjectUnderTest: Sendable {
    let subject = CallbackSubject<Int, Never>()
    let subscriptions = AtomicBox<[CallbackSubscription]>([], name: "pairs.subscriptions")

    func subscribe(on queue: CallbackQueue) {
        let subscription = self.subject.subscribe(on: queue) { [weak subject] _ in
            _ = subject?.subscriberCount
        } receiveCompletion: { _ in
        }
        self.subscriptions.mutate { $0.append(subscription) }
    }
}
