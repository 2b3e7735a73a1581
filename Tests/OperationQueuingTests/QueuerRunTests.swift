import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

/// How a `Queuer.run` call ended.
private enum RunOutcome: Equatable, Sendable {
    case value(Int)
    case cancelled
    case failed
}

/// A task that awaits `queuer.run(body)` and records how the call ended.
private final class AwaitedRun: Sendable {
    let task: Task<Void, Never>
    private let recorded = AtomicBox<RunOutcome?>(nil)

    init(_ queuer: Queuer, _ body: @escaping @Sendable () async throws -> Int) {
        let recorded = self.recorded
        self.task = Task {
            let outcome: RunOutcome
            do {
                outcome = .value(try await queuer.run(body))
            } catch is CancellationError {
                outcome = .cancelled
            } catch {
                outcome = .failed
            }
            recorded.mutate { $0 = outcome }
        }
    }

    /// How the call ended, or `nil` if it had not ended within ten seconds.
    func outcome() async -> RunOutcome? {
        _ = await suspendUntil { self.recorded.value != nil }
        return self.recorded.value
    }
}

@Suite("Queuer.run cancellation", .timeLimit(.minutes(1)))
struct QueuerRunTests {
    @Test("cancelling a call waiting on a paused queuer throws CancellationError at once; the body never runs")
    func cancelWhilePaused() async throws {
        let queuer = Queuer(name: "test.run.paused")
        queuer.pause()
        defer { queuer.resume() }  // lets a call that failed to return end with the test
        let ran = AtomicBox(0)
        let call = AwaitedRun(queuer) {
            ran.mutate { $0 += 1 }
            return 1
        }
        #expect(await suspendUntil { queuer.operationCount == 1 })
        call.task.cancel()
        #expect(await call.outcome() == .cancelled, "returned while the queuer is still paused")
        queuer.resume()
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(ran.value == 0, "the body never runs, not even once the queue reaches its operation")
        // Foundation takes a finished operation off its queue just after it wakes the waiters.
        #expect(await suspendUntil { queuer.operationCount == 0 })
        #expect(try await queuer.run { 42 } == 42, "the queue goes on as before")
    }

    @Test("cancelling a call waiting for the only busy slot throws CancellationError at once; it takes no slot")
    func cancelWhileSlotsAreBusy() async throws {
        let queuer = Queuer(name: "test.run.busy", maxConcurrentOperationCount: 1)
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        let blocking = DispatchSemaphore(value: 0)
        queuer.addOperation {
            blocking.signal()
            hold(until: release)
        }
        #expect(await waitOffPool(blocking))
        let ran = AtomicBox(0)
        let calls = (0..<3).map { _ in
            AwaitedRun(queuer) {
                ran.mutate { $0 += 1 }
                return 1
            }
        }
        #expect(await suspendUntil { queuer.operationCount == 4 })
        for call in calls { call.task.cancel() }
        for call in calls {
            let outcome = await call.outcome()
            #expect(outcome == .cancelled, "returned while the slot is still held")
            if outcome == nil { break }  // the others would time out too
        }
        release.signal()
        #expect(try await queuer.run { 7 } == 7, "the cancelled calls hold no slot")
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(ran.value == 0)
        #expect(await suspendUntil { queuer.operationCount == 0 })
    }

    @Test("a task cancelled before it calls run gets CancellationError and queues nothing")
    func alreadyCancelled() async {
        let queuer = Queuer(name: "test.run.early")
        let ran = AtomicBox(false)
        let call = Task {
            _ = await suspendUntil { Task.isCancelled }  // the task is cancelled before it calls run
            return try await queuer.run { ran.mutate { $0 = true } }
        }
        call.cancel()
        let callEnded = await completes { await #expect(throws: CancellationError.self) { try await call.value } }
        #expect(callEnded)
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(ran.value == false)
    }

    @Test("cancelAll before the body starts ends the call with CancellationError")
    func cancelAllBeforeStart() async {
        let queuer = Queuer(name: "test.run.cancelall")
        queuer.pause()
        defer { queuer.resume() }
        let ran = AtomicBox(false)
        let call = AwaitedRun(queuer) {
            ran.mutate { $0 = true }
            return 1
        }
        #expect(await suspendUntil { queuer.operationCount == 1 })
        queuer.cancelAll()
        queuer.resume()
        #expect(await call.outcome() == .cancelled)
        #expect(ran.value == false)
    }

    @Test("a cancel that races the start: the body runs and the call returns its value, or neither; never a hang")
    func cancelRacesTheStart() async {
        let rounds = 300
        var ranRounds = 0
        for round in 0..<rounds {
            let queuer = Queuer(name: "test.run.race", maxConcurrentOperationCount: 1)
            queuer.pause()
            let ran = AtomicBox(0)
            let call = AwaitedRun(queuer) {
                ran.mutate { $0 += 1 }
                return round
            }
            #expect(await suspendUntil { queuer.operationCount == 1 })
            let task = call.task
            #expect(await runOnThreadsOffPool(2) { index in if index == 0 { queuer.resume() } else { task.cancel() } })
            let outcome = await call.outcome()
            #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
            switch outcome {
            case .value(round):
                #expect(ran.value == 1, "round \(round): a value comes from one run of the body")
                ranRounds += 1
            case .cancelled:
                #expect(ran.value == 0, "round \(round): a cancelled call never runs its body")
            case nil:
                Issue.record("round \(round): the call never returned")
                queuer.resume()
            default:
                Issue.record("round \(round): unexpected outcome \(String(describing: outcome))")
            }
            if outcome == nil { break }
        }
        // Both outcomes are legal; this only reports how the race fell, so that a run that never races shows.
        print("Queuer.run cancel race: the body ran in \(ranRounds) of \(rounds) rounds")
    }
}
