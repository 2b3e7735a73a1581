import Dispatch
import SafeValueCore
import TestSupport
import Testing

@Suite("QueueSafeValue: suspend and stress", .timeLimit(.minutes(1)))
struct QueueSafeValueSuspendTests {
    @Test("suspend commands read and write")
    func suspendCommands() async {
        let value = QueueSafeValue(value: 1)
        #expect(await value.suspend.lowestPriority.get() == .success(1))
        #expect(await value.suspend.highestPriority.set(newValue: 2) == .success(2))
        #expect(await value.suspend.lowestPriority.set { $0 *= 10 } == .success(20))
        #expect(await value.suspend.lowestPriority.map { $0 + 1 } == .success(21))
    }

    @Test("more tasks than cores can all await one held value, and all finish once it is released")
    func suspendDoesNotBlockThreads() async {
        let value = QueueSafeValue(value: 0)
        let queue = TaggedQueue("test.suspend.hold")
        let hold = ValueHold(value, on: queue.queue)
        #expect(hold.isHolding())
        let tasks = contendingThreads * 8
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask { await value.suspend.lowestPriority.set { $0 += 1 } }
            }
            // Every task is parked on the value; if they blocked threads, the pool would be exhausted here.
            #expect(await eventuallyAsync { value.waitingCommandCount == tasks })
            hold.release()
        }
        #expect(value.wait.lowestPriority.get() == .success(tasks))
    }

    @Test("a task cancelled while its command waits gets cancelled promptly, and the command never runs")
    func cancelledWhileWaiting() async {
        let value = QueueSafeValue(value: 0)
        let queue = TaggedQueue("test.suspend.cancel")
        let hold = ValueHold(value, on: queue.queue)
        #expect(hold.isHolding())
        let task = Task { await value.suspend.lowestPriority.set { $0 = 99 } }
        #expect(await eventuallyAsync { value.waitingCommandCount == 1 })
        task.cancel()
        #expect(await task.value == .failure(.cancelled), "returned while the value was still held")
        #expect(value.waitingCommandCount == 0)
        hold.release()
        #expect(value.wait.lowestPriority.get() == .success(0))
    }

    @Test("a task already cancelled gets cancelled without running its command")
    func alreadyCancelled() async {
        let value = QueueSafeValue(value: 0)
        let ran = AtomicBox(false)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await value.suspend.highestPriority.set { _ in ran.mutate { $0 = true } }
        }
        #expect(await task.value == .failure(.cancelled))
        #expect(ran.value == false)
    }

    @Test("threads mixing every schedule and priority end with the exact count")
    func stress() async {
        let value = QueueSafeValue(value: 0)
        let queue = DispatchQueue(label: "test.stress", attributes: .concurrent)
        let perWorker = 300
        let workers = contendingThreads * 2
        let asyncDone = DispatchGroup()
        let threadsFinished = runOnThreads(workers) { worker in
            for step in 0..<perWorker {
                switch (worker + step) % 3 {
                case 0:
                    let command = step.isMultiple(of: 2) ? value.wait.highestPriority : value.wait.lowestPriority
                    command.set { $0 += 1 }
                default:
                    asyncDone.enter()
                    let schedule = value.async(performIn: queue)
                    let command = step.isMultiple(of: 2) ? schedule.highestPriority : schedule.lowestPriority
                    command.set(accessClosure: { $0 += 1 }) { _ in asyncDone.leave() }
                }
            }
        }
        #expect(threadsFinished)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<workers {
                group.addTask {
                    for _ in 0..<perWorker {
                        let command =
                            index.isMultiple(of: 2) ? value.suspend.highestPriority : value.suspend.lowestPriority
                        await command.set { $0 += 1 }
                    }
                }
            }
        }
        #expect(asyncDone.wait(timeout: deadline(30)) == .success)
        #expect(await value.suspend.lowestPriority.get() == .success(2 * workers * perWorker))
    }
}

/// Polls `condition` from a task, yielding between tries, for at most ten seconds.
private func eventuallyAsync(_ condition: () -> Bool) async -> Bool {
    let limit = deadline()
    while !condition() {
        if DispatchTime.now() > limit { return false }
        try? await Task.sleep(for: .microseconds(100))
    }
    return true
}
