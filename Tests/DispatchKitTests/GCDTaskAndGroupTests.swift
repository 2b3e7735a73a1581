import Dispatch
import DispatchKit
import TestSupport
import Testing

@Suite("GCDTask and GCDGroup", .timeLimit(.minutes(1)))
struct GCDTaskAndGroupTests {
    @Test("a task runs on its queue with async and sync")
    func taskRuns() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.task")
            let onQueue = AtomicBox<[Bool]>([])
            let done = DispatchSemaphore(value: 0)
            GCDTask(queue: queue) {
                onQueue.mutate { $0.append(queue.isCurrent) }
                done.signal()
            }.async()
            checks.expect(done.wait(timeout: deadline()) == .success)
            GCDTask(queue: queue) { onQueue.mutate { $0.append(queue.isCurrent) } }.sync()
            checks.expect(onQueue.value == [true, true])
        }
    }

    @Test("a task cancelled before it runs skips its block, and its chain still follows")
    func cancelledTask() async throws {
        try await offPoolTest { checks in
            let ran = AtomicBox<[String]>([])
            let done = DispatchSemaphore(value: 0)
            let task = GCDTask(queue: GCDQueue(name: "test.cancel")) { ran.mutate { $0.append("task") } }
            task <> {
                ran.mutate { $0.append("next") }
                done.signal()
            }
            task.cancel()
            task.async()
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(ran.value == ["next"])
            checks.expect(task.isCancelled)
        }
    }

    @Test("chains keep their order across queues, with queue + block and <>")
    func chains() async throws {
        try await offPoolTest { checks in
            let first = GCDQueue(name: "test.chain.1")
            let second = GCDQueue(name: "test.chain.2")
            let log = AtomicBox<[String]>([])
            let done = DispatchSemaphore(value: 0)
            let start = first + { log.mutate { $0.append("a on first: \(first.isCurrent)") } }
            start <> { log.mutate { $0.append("b on first: \(first.isCurrent)") } }
                <> GCDTask(queue: second) { log.mutate { $0.append("c on second: \(second.isCurrent)") } }
                <> {
                    log.mutate { $0.append("d on second: \(second.isCurrent)") }
                    done.signal()
                }
            start.async()
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(
                log.value == ["a on first: true", "b on first: true", "c on second: true", "d on second: true"]
            )
        }
    }

    @Test("chaining to a finished task starts at once")
    func chainAfterFinish() async throws {
        try await offPoolTest { checks in
            let task = GCDTask(queue: GCDQueue(name: "test.finished")) {}
            task.sync()
            let done = DispatchSemaphore(value: 0)
            task.chain { done.signal() }
            checks.expect(done.wait(timeout: deadline()) == .success)
        }
    }

    @Test("a group waits for its blocks and tasks, each on its own queue, then notifies")
    func group() async throws {
        try await offPoolTest { checks in
            let groupQueue = GCDQueue(name: "test.group")
            let taskQueue = GCDQueue(name: "test.group.task")
            let group = GCDGroup(queue: groupQueue)
            let log = AtomicBox<[String]>([])
            group <<< { log.mutate { $0.append("block on group queue: \(groupQueue.isCurrent)") } }
            group
                <<< GCDTask(queue: taskQueue) { log.mutate { $0.append("task on its queue: \(taskQueue.isCurrent)") } }
            group.async([{ log.mutate { $0.append("array block") } }])
            group.async([GCDTask(queue: taskQueue) { log.mutate { $0.append("array task") } }])
            checks.expect(group.wait(timeout: deadline()) == .success)
            checks.expect(log.value.count == 4)
            checks.expect(log.value.contains("block on group queue: true"))
            checks.expect(log.value.contains("task on its queue: true"))

            let notified = DispatchSemaphore(value: 0)
            group.notify { notified.signal() }
            checks.expect(notified.wait(timeout: deadline()) == .success)
            group.notify(GCDTask(queue: taskQueue) { notified.signal() })
            checks.expect(notified.wait(timeout: deadline()) == .success)
        }
    }

    @Test("wait(timeout:) times out while the group is entered, and succeeds after leave")
    func enterLeave() async throws {
        try await offPoolTest { checks in
            let group = GCDGroup()
            group.enter()
            checks.expect(group.wait(timeout: .now() + .milliseconds(30)) == .timedOut)
            group.leave()
            checks.expect(group.wait(timeout: deadline()) == .success)
            group.wait()
        }
    }

    @Test("wait(timeout:) with a Duration: zero only looks, a short one times out, a huge one waits without a limit")
    func durationWait() async throws {
        try await offPoolTest { checks in
            let group = GCDGroup()
            group.enter()
            checks.expect(group.wait(timeout: Duration.zero) == .timedOut)
            checks.expect(group.wait(timeout: .seconds(-1)) == .timedOut)
            checks.expect(group.wait(timeout: .milliseconds(1)) == .timedOut)
            DispatchQueue.global().async { group.leave() }
            checks.expect(group.wait(timeout: .seconds(Int64.max)) == .success)
            checks.expect(group.wait(timeout: Duration.zero) == .success)
        }
    }

    @Test("enter and leave balanced from many threads at once leave the group done")
    func balancedEnterLeaveUnderContention() async throws {
        try await offPoolTest { checks in
            let group = GCDGroup()
            checks.expect(
                runOnThreads(contendingThreads) { _ in
                    for _ in 0..<1_000 {
                        group.enter()
                        group.leave()
                    }
                }
            )
            checks.expect(group.wait(timeout: deadline()) == .success)
        }
    }

    /// Ways to call `leave()` once too often.
    enum Unbalanced: Int, CaseIterable, Codable, Sendable {
        case leaveOnNewGroup, leaveTwiceAfterOneEnter, leaveAfterBlocksRan
    }

    @Test(
        "leave() without a matching enter() traps with a message naming GCDGroup.leave",
        arguments: Unbalanced.allCases
    )
    func unbalancedLeaveTraps(shape: Unbalanced) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [shape] in
            // The body blocks (syncs, waits): on a thread of its own, not on the exit test's task.
            await offPool {
                let group = GCDGroup(queue: GCDQueue(name: "test.group.unbalanced"))
                switch shape {
                case .leaveOnNewGroup:
                    break
                case .leaveTwiceAfterOneEnter:
                    group.enter()
                    group.leave()
                case .leaveAfterBlocksRan:
                    group <<< {} <<< {}
                    group.wait()
                }
                group.leave()
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains(
                "GCDGroup.leave: called with no enter() left to match; every leave() must follow an enter()"
            ),
            "\(stderr)"
        )
    }

    @Test("await group.wait() suspends until the group is done")
    func asyncWait() async {
        let group = GCDGroup(queue: GCDQueue(name: "test.async.wait"))
        let count = AtomicBox(0)
        for _ in 0..<10 { group <<< { count.mutate { $0 += 1 } } }
        #expect(await completes { await group.wait() })
        #expect(count.value == 10)
    }

    @Test("await group.waitForAll() suspends until the group is done, and lets the main queue run meanwhile")
    func waitForAll() async {
        let group = GCDGroup(queue: GCDQueue(name: "test.wait.for.all"))
        let count = AtomicBox(0)
        for _ in 0..<10 { group <<< { count.mutate { $0 += 1 } } }
        // The group ends only once a block on the main queue has run, and the wait is made on the main actor: a wait
        // that blocked the main queue would never see that block run.
        group.enter()
        DispatchQueue.main.async { group.leave() }
        #expect(await completes { await self.waitForAllOnMainActor(group) })
        #expect(count.value == 10)
    }

    @MainActor
    private func waitForAllOnMainActor(_ group: GCDGroup) async {
        await group.waitForAll()
    }
}
