import Dispatch
import SafeValueCore
import TestSupport
import Testing

@Suite("QueueSafeValue: re-entrancy, errors and lifetimes", .timeLimit(.minutes(1)))
struct QueueSafeValueLifetimeTests {
    @Test("a wait command inside a command closure of the same value fails at once with reentrantWait")
    func reentrantWait() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let nested = AtomicBox<[Result<Int, QueueSafeValueError>]>([])
            value.wait.lowestPriority.set { _ in
                let results = [value.wait.lowestPriority.get(), value.wait.highestPriority.set(newValue: 9)]
                nested.mutate { $0 = results }
            }
            checks.expect(nested.value == [.failure(.reentrantWait), .failure(.reentrantWait)])

            let queue = TaggedQueue("test.reentrant")
            let fromAsync = AtomicBox<Result<Int, QueueSafeValueError>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            value.async(performIn: queue.queue).lowestPriority.set(accessClosure: { _ in
                let result = value.wait.lowestPriority.get()
                fromAsync.mutate { $0 = result }
                finished.signal()
            })
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(fromAsync.value == .failure(.reentrantWait))
            checks.expect(value.wait.lowestPriority.get() == .success(0), "the failed commands changed nothing")
        }
    }

    @Test("a wait after a manual closure returned but before its done simply waits")
    func waitAfterManualClosureReturned() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let queue = TaggedQueue("test.manual.wait")
            let done = AtomicBox<CommandCompletionClosure?>(nil)
            let result = AtomicBox<Result<Int, QueueSafeValueError>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            queue.queue.async {
                value.async(performIn: queue.queue).lowestPriority.set(manualCompletion: { current, finish in
                    current = 4
                    done.mutate { $0 = finish }
                    // Returned on this thread without done: a wait issued from here later must wait, not fail.
                    queue.queue.async {
                        onNewThread { done.value?() }
                        let waited = value.wait.lowestPriority.get()
                        result.mutate { $0 = waited }
                        finished.signal()
                    }
                })
            }
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(result.value == .success(4))
        }
    }

    @Test("async and suspend commands issued inside a command are queued and run after it")
    func nestedAsyncCommandsQueue() async {
        let value = QueueSafeValue(value: [String]())
        let queue = TaggedQueue("test.nested")
        let spawned = AtomicBox<Task<Void, Never>?>(nil)
        _ = await offPool {  // a wait command blocks its caller: it does not run on a task
            value.wait.lowestPriority.set { log in
                log.append("outer start")
                value.async(performIn: queue.queue).highestPriority.set(accessClosure: { $0.append("async") })
                spawned.mutate { $0 = Task { await value.suspend.lowestPriority.set { $0.append("suspend") } } }
                log.append("outer end")
            }
        }
        await spawned.value?.value
        #expect(await offPool { queue.drain() })
        let log = await offPool { (try? value.wait.lowestPriority.get().get()) ?? [] }
        #expect(Array(log.prefix(2)) == ["outer start", "outer end"])
        #expect(Set(log.dropFirst(2)) == ["async", "suspend"])
    }

    @Test("a nil closure gives commandClosureDeallocated, and a released holder wins over it")
    func nilClosures() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            checks.expect(value.wait.lowestPriority.set(completion: nil) == .failure(.commandClosureDeallocated))
            checks.expect(value.wait.lowestPriority.set(manualCompletion: nil) == .failure(.commandClosureDeallocated))
            checks.expect(
                value.wait.lowestPriority.map(completion: nil as ((Int) -> String)?)
                    == .failure(.commandClosureDeallocated)
            )

            let queue = TaggedQueue("test.nil")
            let asyncResults = AtomicBox<[Result<Int, QueueSafeValueError>]>([])
            value.async(performIn: queue.queue).lowestPriority.set(accessClosure: nil) { result in
                asyncResults.mutate { $0.append(result) }
            }
            value.async(performIn: queue.queue).lowestPriority.set(manualCompletion: nil) { result in
                asyncResults.mutate { $0.append(result) }
            }
            checks.expect(queue.drain())
            checks.expect(
                asyncResults.value == [.failure(.commandClosureDeallocated), .failure(.commandClosureDeallocated)]
            )

            let orphan = QueueSafeValue(value: 0).wait.lowestPriority
            checks.expect(orphan.set(completion: nil) == .failure(.valueContainerDeinited))
        }
    }

    @Test("no schedule or command object keeps the holder alive")
    func commandsHoldTheHolderWeakly() {
        weak var weakHolder: QueueSafeValue<Int>?
        var holder: QueueSafeValue<Int>? = QueueSafeValue(value: 1)
        weakHolder = holder
        let queue = DispatchQueue(label: "test.weak")
        let waitCommand = holder!.wait.lowestPriority
        let asyncCommand = holder!.async(performIn: queue).highestPriority
        let suspendCommand = holder!.suspend.lowestPriority
        holder = nil
        #expect(weakHolder == nil)
        #expect(waitCommand.get() == .failure(.valueContainerDeinited))
        withExtendedLifetime((asyncCommand, suspendCommand)) {}
    }

    @Test("commands issued before the holder is released still complete; later ones fail without running")
    func pendingCommandsSurviveTheHolder() async throws {
        try await offPoolTest { checks in
            var holder: QueueSafeValue<Int>? = QueueSafeValue(value: 0)
            let queue = TaggedQueue("test.survive")
            let hold = ValueHold(holder!, on: queue.queue)
            checks.expect(hold.isHolding())
            let command = holder!.async(performIn: queue.queue).lowestPriority
            let results = AtomicBox<[Result<Int, QueueSafeValueError>]>([])
            let completed = DispatchGroup()
            for _ in 0..<3 {
                completed.enter()
                command.set(
                    accessClosure: { $0 += 1 },
                    completion: { result in
                        results.mutate { $0.append(result) }
                        completed.leave()
                    }
                )
            }
            holder = nil
            let ranAfterRelease = AtomicBox(false)
            completed.enter()
            command.set(
                accessClosure: { _ in ranAfterRelease.mutate { $0 = true } },
                completion: { result in
                    results.mutate { $0.append(result) }
                    completed.leave()
                }
            )
            hold.release()
            checks.expect(completed.wait(timeout: deadline()) == .success)
            checks.expect(results.value.contains(.failure(.valueContainerDeinited)))
            checks.expect(
                results.value.filter { $0 != .failure(.valueContainerDeinited) } == [
                    .success(1), .success(2), .success(3),
                ]
            )
            checks.expect(ranAfterRelease.value == false)
        }
    }

    @Test("the shorthand holders work, and a temporary holder fails")
    func shorthandHolders() async throws {
        try await offPoolTest { checks in
            let synced = QueueSafeSyncedValue(value: 1)
            checks.expect(synced.highestPriority.set { $0 += 1 } == .success(2))
            checks.expect(synced.lowestPriority.get() == .success(2))
            checks.expect(QueueSafeSyncedValue(value: 1).lowestPriority.get() == .failure(.valueContainerDeinited))

            let queue = TaggedQueue("test.asynced")
            let asynced = QueueSafeAsyncedValue(value: 10, queue: queue.queue)
            let seen = AtomicBox<[Bool]>([])
            asynced.lowestPriority.set(newValue: 11)
            asynced.highestPriority.get { result in seen.mutate { $0.append(queue.isCurrent && result == .success(11)) }
            }
            checks.expect(queue.drain())
            checks.expect(seen.value == [true])
        }
    }
}
