import Dispatch
import Foundation
import SafeValueCore
import TestSupport
import Testing

/// What a `wait` command that finds the value taken does: it watches for the turn a moment, then queues and sleeps.
@Suite("QueueSafeValue: wait commands under contention", .timeLimit(.minutes(1)))
struct QueueSafeValueContentionTests {
    /// Two threads per core, so that some waiters are granted the turn while they sleep and others while they watch.
    static let threads = 2 * ProcessInfo.processInfo.activeProcessorCount

    @Test("threads taking turns on one value lose no update and never run two closures at once")
    func noLostUpdate() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let inside = AtomicBox(0)
            let overlaps = AtomicBox(0)
            let rounds = 2_000
            let finished = runOnThreads(Self.threads) { index in
                let command = index.isMultiple(of: 2) ? value.wait.highestPriority : value.wait.lowestPriority
                for _ in 0..<rounds {
                    command.set { count in
                        let running = inside.mutate { now -> Int in
                            now += 1
                            return now
                        }
                        if running > 1 { overlaps.mutate { $0 += 1 } }
                        count += 1
                        inside.mutate { $0 -= 1 }
                    }
                }
            }
            checks.expect(finished)
            checks.expect(value.wait.lowestPriority.get() == .success(Self.threads * rounds))
            checks.expect(overlaps.value == 0)
        }
    }

    @Test("commands queued one after another run in that order once the value comes free")
    func joinsTheQueue() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: [String]())
            let queue = DispatchQueue(label: "test.contention.hold")
            let hold = ValueHold(value, on: queue)
            checks.expect(hold.isHolding())
            let finished = DispatchGroup()
            for label in ["first", "second", "third"] {
                finished.enter()
                let queued = value.waitingCommandCount
                onNewThread {
                    value.wait.lowestPriority.set { $0.append(label) }
                    finished.leave()
                }
                // Issued one after another: each is queued before the next starts.
                checks.expect(eventually { value.waitingCommandCount == queued + 1 })
            }
            hold.release()
            checks.expect(finished.wait(timeout: deadline()) == .success)
            checks.expect(value.wait.lowestPriority.get() == .success(["first", "second", "third"]))
        }
    }

    @Test("a waiter that has gone to sleep is woken by its grant")
    func sleeperIsWoken() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let queue = DispatchQueue(label: "test.contention.sleeper")
            let hold = ValueHold(value, on: queue)
            checks.expect(hold.isHolding())
            let done = DispatchSemaphore(value: 0)
            onNewThread {
                value.wait.lowestPriority.set { $0 += 1 }
                done.signal()
            }
            checks.expect(eventually { value.waitingCommandCount == 1 })
            // Long past its watching: the waiter sleeps by now, and only the grant can wake it.
            checks.expect(done.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
            hold.release()
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(value.wait.lowestPriority.get() == .success(1))
        }
    }
}
