import Dispatch
import SafeValueCore
import Synchronization
import TestSupport
import Testing

/// Completions of `async` commands: each starts after its command released the value, and on a serial queue they
/// come in command order, for automatic and manual completion alike.
@Suite("QueueSafeAsyncCommand: completions after the release, in command order", .timeLimit(.minutes(2)))
struct QueueSafeAsyncCommandTests {
    /// A queue of either kind, of its own.
    private static func queue(serial: Bool, _ label: String) -> DispatchQueue {
        DispatchQueue(label: label, attributes: serial ? [] : .concurrent)
    }

    @Test(
        "a command issued from a manual command's completion queues behind the command that waited for its done",
        arguments: [true, false]
    )
    func completionOfManualCommandStartsAfterRelease(serial: Bool) async throws {
        try await offPoolTest { checks in
            let queue = Self.queue(serial: serial, "test.async.manual.completion")
            let doneCaller = DispatchQueue(label: "test.async.manual.done")
            let rounds = 2_000
            var overtaken = 0
            for round in 0..<rounds {
                // The value records the order in which the commands ran.
                let value = QueueSafeValue(value: [String]())
                let schedule = value.async(performIn: queue)
                let doneBox = AtomicBox<CommandCompletionClosure?>(nil)
                let holding = DispatchSemaphore(value: 0)
                let finished = DispatchSemaphore(value: 0)
                // A holds the value until done; its completion issues H, of the highest priority.
                schedule.lowestPriority.set(
                    manualCompletion: { history, done in
                        history.append("A")
                        doneBox.mutate { $0 = done }
                        holding.signal()
                    },
                    completion: { _ in
                        schedule.highestPriority.set(
                            accessClosure: { $0.append("H") },
                            completion: { _ in finished.signal() }
                        )
                    }
                )
                guard checks.expect(holding.wait(timeout: deadline()) == .success, "round \(round): A never ran") else {
                    return
                }
                // L waits behind A: an `async` command that finds the value held is queued before it returns.
                schedule.lowestPriority.set(accessClosure: { $0.append("L") })
                checks.expect(value.waitingCommandCount == 1, "round \(round): L is not pending")
                doneCaller.async { doneBox.value?() }
                let ran = finished.wait(timeout: deadline()) == .success
                guard checks.expect(ran, "round \(round): H never ran") else { return }
                let order = value.wait.lowestPriority.get()
                if order != .success(["A", "L", "H"]) { overtaken += 1 }
            }
            checks.expect(
                overtaken == 0,
                "H overtook L, which waited when A was released, in \(overtaken) of \(rounds)"
            )
        }
    }

    @Test(
        "a completion of an automatic command starts after the release too: a command it issues comes after the one waiting",
        arguments: [true, false]
    )
    func completionOfAutomaticCommandStartsAfterRelease(serial: Bool) async throws {
        try await offPoolTest { checks in
            let queue = Self.queue(serial: serial, "test.async.automatic.completion")
            var overtaken = 0
            let rounds = 500
            for round in 0..<rounds {
                let value = QueueSafeValue(value: [String]())
                let schedule = value.async(performIn: queue)
                let inside = DispatchSemaphore(value: 0)
                let proceed = DispatchSemaphore(value: 0)
                let finished = DispatchSemaphore(value: 0)
                schedule.lowestPriority.set(
                    accessClosure: { history in
                        history.append("A")
                        inside.signal()
                        hold(until: proceed)
                    },
                    completion: { _ in
                        schedule.highestPriority.set(
                            accessClosure: { $0.append("H") },
                            completion: { _ in finished.signal() }
                        )
                    }
                )
                guard checks.expect(inside.wait(timeout: deadline()) == .success, "round \(round)") else { return }
                schedule.lowestPriority.set(accessClosure: { $0.append("L") })
                proceed.signal()
                guard checks.expect(finished.wait(timeout: deadline()) == .success, "round \(round)") else { return }
                if value.wait.lowestPriority.get() != .success(["A", "L", "H"]) { overtaken += 1 }
            }
            checks.expect(overtaken == 0, "H overtook L in \(overtaken) of \(rounds) rounds")
        }
    }

    @Test(
        "completions on a serial queue follow the order the commands ran in, manual and automatic mixed, done from anywhere"
    )
    func mixedCompletionsInCommandOrder() async throws {
        try await offPoolTest { checks in
            let queue = DispatchQueue(label: "test.async.mixed.serial")
            let doneCallers = DispatchQueue(label: "test.async.mixed.done", attributes: .concurrent)
            // The value records the order in which the commands ran; the completions, the order in which they came.
            let value = QueueSafeValue(value: [Int]())
            let completed = AtomicBox<[Int]>([])
            let perIssuer = 1_000
            let issuers = 2
            let allCompleted = DispatchGroup()
            // The race of a command issued just as a done frees the value is QueueSafeValueSuspendTests'
            // "a command issued just as a manual command's done frees the value completes after it on a serial queue".
            let issued = runOnThreads(issuers) { issuer in
                let schedule = value.async(performIn: queue)
                for index in 0..<perIssuer {
                    let id = issuer * perIssuer + index
                    let completion: QueueSafeAsyncCommand<[Int]>.AsyncCompletion = { _ in
                        completed.mutate { $0.append(id) }
                        allCompleted.leave()
                    }
                    allCompleted.enter()
                    switch id % 4 {
                    case 0:
                        schedule.lowestPriority.set(accessClosure: { $0.append(id) }, completion: completion)
                    case 1:  // done inside the closure
                        schedule.lowestPriority.set(
                            manualCompletion: { ran, done in
                                ran.append(id)
                                done()
                            },
                            completion: completion
                        )
                    case 2:  // done later, from another thread
                        schedule.lowestPriority.set(
                            manualCompletion: { ran, done in
                                ran.append(id)
                                doneCallers.async { done() }
                            },
                            completion: completion
                        )
                    default:  // done later, from the queue itself
                        schedule.highestPriority.set(
                            manualCompletion: { ran, done in
                                ran.append(id)
                                queue.async { done() }
                            },
                            completion: completion
                        )
                    }
                }
            }
            checks.expect(issued)
            checks.expect(allCompleted.wait(timeout: deadline(60)) == .success)
            let ran = (try? value.wait.lowestPriority.get().get()) ?? []
            checks.expect(ran.count == issuers * perIssuer)
            checks.expect(completed.value == ran, "completions on a serial queue in the order the commands ran")
        }
    }
}
