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
        #expect(await offPool { hold.isHolding() })
        let tasks = contendingThreads * 8
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask { await value.suspend.lowestPriority.set { $0 += 1 } }
            }
            // Every task is parked on the value; if they blocked threads, the pool would be exhausted here.
            #expect(await eventuallyAsync { value.waitingCommandCount == tasks })
            hold.release()
        }
        #expect(await offPool { value.wait.lowestPriority.get() } == .success(tasks))
    }

    @Test("a task cancelled while its command waits gets cancelled promptly, and the command never runs")
    func cancelledWhileWaiting() async {
        let value = QueueSafeValue(value: 0)
        let queue = TaggedQueue("test.suspend.cancel")
        let hold = ValueHold(value, on: queue.queue)
        #expect(await offPool { hold.isHolding() })
        let task = Task { await value.suspend.lowestPriority.set { $0 = 99 } }
        #expect(await eventuallyAsync { value.waitingCommandCount == 1 })
        task.cancel()
        let taskReturned = await completes {
            #expect(await task.value == .failure(.cancelled), "returned while the value was still held")
        }
        #expect(taskReturned)
        #expect(value.waitingCommandCount == 0)
        hold.release()
        #expect(await offPool { value.wait.lowestPriority.get() } == .success(0))
    }

    @Test("a task already cancelled gets cancelled without running its command")
    func alreadyCancelled() async {
        let value = QueueSafeValue(value: 0)
        let ran = AtomicBox(false)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await value.suspend.highestPriority.set { _ in ran.mutate { $0 = true } }
        }
        let taskReturned = await completes { #expect(await task.value == .failure(.cancelled)) }
        #expect(taskReturned)
        #expect(ran.value == false)
    }

    @Test("threads mixing every schedule and priority end with the exact count")
    func stress() async {
        let value = QueueSafeValue(value: 0)
        let queue = DispatchQueue(label: "test.stress", attributes: .concurrent)
        let perWorker = 300
        let workers = contendingThreads * 2
        let asyncDone = DispatchGroup()
        let threadsFinished = await runOnThreadsOffPool(workers) { worker in
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
        #expect(await waitOffPool(asyncDone))
        #expect(await value.suspend.lowestPriority.get() == .success(2 * workers * perWorker))
    }
}

/// Polls `condition` from a task, yielding between tries, for at most ten seconds.
private func eventuallyAsync(_ condition: () -> Bool) async -> Bool {
    let limit = deadline()
    while !condition() {
        if DispatchTime.now() > limit || Task.isCancelled { return false }  // a cancelled sleep would spin
        try? await Task.sleep(for: .microseconds(100))
    }
    return true
}

@Suite("QueueSafeValue: hand-overs and isolation", .timeLimit(.minutes(2)))
struct QueueSafeValueHandOverTests {
    @Test("threads issuing wait sets and tasks issuing suspend sets on one value: exact count, quiet under TSan")
    func waitAndSuspendStress() async {
        let value = QueueSafeValue(value: 0)
        let rounds = 2_000
        let threadsDone = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            onNewThread {
                for _ in 0..<rounds { value.wait.lowestPriority.set { $0 += 1 } }
                threadsDone.signal()
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<rounds { await value.suspend.lowestPriority.set { $0 += 1 } }
                }
            }
        }
        for _ in 0..<2 { #expect(await waitOffPool(threadsDone)) }
        #expect(await offPool { value.wait.lowestPriority.get() } == .success(4 * rounds))
    }

    @Test("a command issued just as a manual command's done frees the value completes after it on a serial queue")
    func completionOrderAtRelease() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let queue = DispatchQueue(label: "test.release.order")
            let order = AtomicBox<[Int]>([])
            let rounds = 20_000
            let closureRan = DispatchSemaphore(value: 0)
            let doneBox = AtomicBox<CommandCompletionClosure?>(nil)
            // Both threads spin, so that `done` and the next command really race.
            let go = SpinFlag()
            let finished = DispatchSemaphore(value: 0)
            onNewThread {
                for round in 1...rounds {
                    guard go.spin(until: round) else { break }
                    doneBox.value?()
                }
                finished.signal()
            }
            let schedule = value.async(performIn: queue).lowestPriority
            for round in 1...rounds {
                schedule.set(
                    manualCompletion: { _, done in
                        doneBox.mutate { $0 = done }
                        closureRan.signal()
                    },
                    completion: { _ in order.mutate { $0.append(2 * round) } }
                )
                guard closureRan.wait(timeout: deadline()) == .success else { break }
                go.set(round)
                for _ in 0..<(round % 64) { go.pause() }  // sweep the moment of issue across the window
                schedule.set(accessClosure: { $0 += 1 }, completion: { _ in order.mutate { $0.append(2 * round + 1) } })
            }
            checks.expect(finished.wait(timeout: deadline()) == .success)
            let drained = DispatchSemaphore(value: 0)
            schedule.get { _ in drained.signal() }
            checks.expect(drained.wait(timeout: deadline()) == .success)
            let recorded = order.value
            checks.expect(recorded.count == 2 * rounds)
            let misordered = zip(recorded, recorded.dropFirst()).filter { $0 > $1 }.count
            checks.expect(misordered == 0, "completions in command order on a serial queue")
        }
    }

    @Test("suspend commands with closures compile and run from the main actor, an actor and nonisolated code")
    func isolations() async {
        let value = QueueSafeValue(value: 0)
        await Self.fromMainActor(value)
        await Counter(value).bump()
        await Self.fromNonisolated(value)
        #expect(await offPool { value.wait.lowestPriority.get() } == .success(3))
    }

    @MainActor
    static func fromMainActor(_ value: QueueSafeValue<Int>) async {
        await value.suspend.lowestPriority.set { $0 += 1 }
        let doubled = await value.suspend.highestPriority.map { $0 * 2 }
        #expect(doubled == .success(2))
    }

    nonisolated static func fromNonisolated(_ value: QueueSafeValue<Int>) async {
        await value.suspend.lowestPriority.set { $0 += 1 }
        #expect(await value.suspend.lowestPriority.map { $0 } == .success(3))
    }

    actor Counter {
        let value: QueueSafeValue<Int>
        var local = 0

        init(_ value: QueueSafeValue<Int>) {
            self.value = value
        }

        func bump() async {
            // The closure touches the actor's own state: it runs on the actor.
            await self.value.suspend.lowestPriority.set {
                $0 += 1
                self.local += 1
            }
            _ = await self.value.suspend.lowestPriority.map { $0 + self.local }
        }
    }
}
