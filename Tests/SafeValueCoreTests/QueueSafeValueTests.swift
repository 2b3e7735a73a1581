import Dispatch
import SafeValueCore
import TestSupport
import Testing

@Suite("QueueSafeValue: order, critical sections and threads", .timeLimit(.minutes(1)))
struct QueueSafeValueTests {
    @Test("a command on a free value starts at once and sees earlier writes")
    func basicCommands() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 1)
            checks.expect(value.wait.lowestPriority.get() == .success(1))
            checks.expect(value.wait.highestPriority.set(newValue: 5) == .success(5))
            checks.expect(value.wait.lowestPriority.set { $0 += 1 } == .success(6))
            checks.expect(value.wait.lowestPriority.map { "\($0)" } == .success("6"))
            let seen = AtomicBox<Int?>(nil)
            value.wait.lowestPriority.get { result in seen.mutate { $0 = try? result.get() } }
            checks.expect(seen.value == 6)
        }
    }

    @Test("every pending highest command runs before any pending lowest one, each in issue order")
    func exactPriorityOrder() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: [String]())
            let queue = TaggedQueue("test.order")
            let hold = ValueHold(value, on: queue.queue)
            checks.expect(hold.isHolding())
            let issued: [(String, Bool)] = [
                ("L1", false), ("H1", true), ("L2", false), ("H2", true), ("L3", false), ("H3", true), ("H4", true),
            ]
            for (label, isHighest) in issued {
                let command =
                    isHighest
                    ? value.async(performIn: queue.queue).highestPriority
                    : value.async(performIn: queue.queue).lowestPriority
                command.set(accessClosure: { $0.append(label) })
            }
            hold.release()
            checks.expect(queue.drain())
            checks.expect(value.wait.lowestPriority.get() == .success(["H1", "H2", "H3", "H4", "L1", "L2", "L3"]))
        }
    }

    @Test("waiting wait commands from several threads also run highest first")
    func waitCommandsByPriority() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: [String]())
            let queue = TaggedQueue("test.order.wait")
            let hold = ValueHold(value, on: queue.queue)
            checks.expect(hold.isHolding())
            let finished = DispatchGroup()
            for index in 0..<4 {
                finished.enter()
                onNewThread {  // one thread each: the global queue would not run four blocked waiters at once
                    let label = index.isMultiple(of: 2) ? "high" : "low"
                    let command = label == "high" ? value.wait.highestPriority : value.wait.lowestPriority
                    command.set { $0.append(label) }
                    finished.leave()
                }
            }
            // Wait until all four are queued behind the hold, then release it.
            checks.expect(eventually { value.waitingCommandCount == 4 })
            hold.release()
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(value.wait.lowestPriority.get() == .success(["high", "high", "low", "low"]))
        }
    }

    @Test("a manual-completion command holds the value until done, which may come later from another thread")
    func manualCompletionHoldsUntilDone() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let queue = TaggedQueue("test.manual")
            let done = AtomicBox<CommandCompletionClosure?>(nil)
            let inside = DispatchSemaphore(value: 0)
            value.async(performIn: queue.queue).lowestPriority.set(manualCompletion: { current, finish in
                current = 1
                done.mutate { $0 = finish }
                inside.signal()
            })
            checks.expect(inside.wait(timeout: deadline()) == .success)

            let read = AtomicBox<Result<Int, QueueSafeValueError>?>(nil)
            let readReturned = DispatchSemaphore(value: 0)
            onNewThread {
                let result = value.wait.lowestPriority.get()
                read.mutate { $0 = result }
                readReturned.signal()
            }
            // The closure has returned, but done has not been called: the reader must still wait.
            checks.expect(readReturned.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
            checks.expect(read.value == nil)
            onNewThread { done.value?() }
            checks.expect(readReturned.wait(timeout: deadline()) == .success)
            checks.expect(read.value == .success(1))
            done.value?()  // a second call does nothing more
            checks.expect(value.wait.lowestPriority.set { $0 += 1 } == .success(2))
        }
    }

    @Test("wait manual completion returns once done is called from another thread")
    func waitManualCompletion() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let result = value.wait.lowestPriority.set(manualCompletion: { current, done in
                current = 7
                onNewThread {
                    done()
                    done()
                }
            })
            checks.expect(result == .success(7))
            let seen = AtomicBox<Int?>(nil)
            value.wait.highestPriority.get(manualCompletion: { result, done in
                seen.mutate { $0 = try? result.get() }
                done()
            })
            checks.expect(seen.value == 7)
        }
    }

    @Test("wait closures run on the calling thread; async closures and completions on performIn")
    func whereClosuresRun() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let caller = currentThreadID()
            let waitThread = AtomicBox<UInt>(0)
            value.wait.lowestPriority.set { _ in waitThread.mutate { $0 = currentThreadID() } }
            checks.expect(waitThread.value == caller)

            let queue = TaggedQueue("test.where")
            let onQueue = AtomicBox<[Bool]>([])
            let finished = DispatchSemaphore(value: 0)
            value.async(performIn: queue.queue).lowestPriority.set(
                accessClosure: { _ in onQueue.mutate { $0.append(queue.isCurrent) } },
                completion: { _ in
                    onQueue.mutate { $0.append(queue.isCurrent) }
                    finished.signal()
                }
            )
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(onQueue.value == [true, true])
        }
    }

    @Test("an async command never blocks its caller, also manual, also on its own serial queue")
    func asyncNeverBlocks() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let queue = TaggedQueue("test.nonblocking")
            let order = AtomicBox<[String]>([])
            let completed = DispatchSemaphore(value: 0)
            queue.queue.async {
                value.async(performIn: queue.queue).lowestPriority.set(
                    manualCompletion: { current, done in
                        current = 1
                        order.mutate { $0.append("closure") }
                        done()
                    },
                    completion: { _ in
                        order.mutate { $0.append("completion") }
                        completed.signal()
                    }
                )
                order.mutate { $0.append("caller returned") }
            }
            checks.expect(completed.wait(timeout: deadline()) == .success)
            checks.expect(order.value == ["caller returned", "closure", "completion"])
        }
    }

    @Test("async completions on a serial queue come in command order")
    func asyncCompletionOrder() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let queue = TaggedQueue("test.completions")
            let completions = AtomicBox<[Int]>([])
            let completed = DispatchGroup()
            for step in 1...50 {
                completed.enter()
                value.async(performIn: queue.queue).lowestPriority.set(
                    accessClosure: { $0 = step },
                    completion: { result in
                        completions.mutate { $0.append((try? result.get()) ?? -1) }
                        completed.leave()
                    }
                )
            }
            checks.expect(completed.wait(timeout: deadline()) == .success)
            checks.expect(completions.value == Array(1...50))
        }
    }

    @Test("the async get completion runs after the value is released")
    func asyncGetIsACompletion() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 3)
            let queue = TaggedQueue("test.getcompletion")
            let nested = AtomicBox<Result<Int, QueueSafeValueError>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            value.async(performIn: queue.queue).lowestPriority.get { _ in
                // Released: a suspend-free read from another thread gets the value at once.
                let fromElsewhere = AtomicBox<Result<Int, QueueSafeValueError>?>(nil)
                let read = DispatchSemaphore(value: 0)
                onNewThread {
                    let result = value.wait.lowestPriority.get()
                    fromElsewhere.mutate { $0 = result }
                    read.signal()
                }
                _ = read.wait(timeout: deadline())
                nested.mutate { $0 = fromElsewhere.value }
                finished.signal()
            }
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(nested.value == .success(3), "the value is free while the completion runs")
        }
    }

    @Test("the QoS overload runs on a global queue")
    func qosOverload() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 1)
            let finished = DispatchSemaphore(value: 0)
            let seen = AtomicBox<Int?>(nil)
            value.async(performIn: .utility).lowestPriority.get { result in
                seen.mutate { $0 = try? result.get() }
                finished.signal()
            }
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(seen.value == 1)
        }
    }
}

@Suite("QueueSafeValue: completions that wait", .timeLimit(.minutes(1)))
struct QueueSafeValueCompletionWaitTests {
    /// How an `async` command of `value` delivers its completion.
    enum CompletionKind: CaseIterable, Sendable {
        case access, manual, failure
    }

    @Test(
        "a wait inside an async completion fails fast with reentrantWait instead of deadlocking the queue",
        arguments: [false, true],
        CompletionKind.allCases
    )
    func waitInsideCompletion(concurrent: Bool, kind: CompletionKind) async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let queue = DispatchQueue(label: "test.completion.wait", attributes: concurrent ? .concurrent : [])
            let helper = TaggedQueue("test.completion.hold")
            let hold = ValueHold(value, on: helper.queue)
            checks.expect(hold.isHolding())
            let seen = AtomicBox<Result<Int, QueueSafeValueError>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            let completion: @Sendable (Result<Int, QueueSafeValueError>) -> Void = { _ in
                // On a serial queue the next command (below) holds the value and needs this very queue.
                let result = value.wait.lowestPriority.get()
                seen.mutate { $0 = result }
                finished.signal()
            }
            let schedule = value.async(performIn: queue).lowestPriority
            switch kind {
            case .access: schedule.set(accessClosure: { $0 += 1 }, completion: completion)
            case .manual:
                schedule.set(
                    manualCompletion: {
                        $0 += 1
                        $1()
                    },
                    completion: completion
                )
            case .failure: schedule.set(accessClosure: nil, completion: completion)
            }
            schedule.set(accessClosure: { $0 += 10 })
            hold.release()
            checks.expect(finished.wait(timeout: deadline()) == .success, "never a deadlock")
            checks.expect(seen.value == .failure(.reentrantWait))
            checks.expect(value.wait.lowestPriority.get() == .success(kind == .failure ? 10 : 11))
        }
    }

    @Test("a wait for another value inside a completion waits normally")
    func waitForAnotherValue() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 1)
            let other = QueueSafeValue(value: 2)
            let queue = TaggedQueue("test.completion.other")
            let seen = AtomicBox<Result<Int, QueueSafeValueError>?>(nil)
            let finished = DispatchSemaphore(value: 0)
            value.async(performIn: queue.queue).lowestPriority.get { _ in
                let result = other.wait.lowestPriority.get()
                seen.mutate { $0 = result }
                finished.signal()
            }
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(seen.value == .success(2))
        }
    }
}
