import Dispatch
import DispatchKit
import Foundation
import TestSupport
import Testing

/// A counter with no lock of its own: only a queue's exclusion keeps it right, and ThreadSanitizer reports a race when
/// two blocks touch it at once.
private final class UnguardedCounter: @unchecked Sendable {
    // Safety: none of its own; the tests use it to prove that a serial queue guards it.
    var value = 0

    /// Reads, waits a moment, and writes back one more: two callers at once lose an increment.
    func slowIncrement() {
        let read = self.value
        Thread.sleep(forTimeInterval: 0.000_05)  // widens the window; the proof is the count and TSan
        self.value = read + 1
    }
}

@Suite("GCDQueue.iterate and the queues its caller is in", .timeLimit(.minutes(1)))
struct GCDQueueIterateTests {
    /// Runs `body` on a new thread and waits for it: a deadlock inside fails the test instead of hanging it.
    private func finishes(_ body: @escaping @Sendable () -> Void) -> Bool {
        runOnThreads(1) { _ in body() }
    }

    @Test(
        "iterations that sync onto a serial queue run its blocks one at a time, whatever queue the caller is in",
        arguments: ["nowhere", "another serial queue", "a concurrent queue", "a global queue"]
    )
    func iterationsKeepSerialExclusion(callerIn: String) async throws {
        try await offPoolTest { checks in
            let a = GCDQueue(name: "test.iterate.exclusive.a")
            let outer: GCDQueue? =
                switch callerIn {
                case "another serial queue": GCDQueue(name: "test.iterate.exclusive.outer")
                case "a concurrent queue": GCDQueue(name: "test.iterate.exclusive.outer", kind: .concurrent)
                case "a global queue": .utility
                default: nil
                }
            let c = GCDQueue(name: "test.iterate.exclusive.c", kind: .concurrent)
            let counter = UnguardedCounter()
            let iterate: @Sendable () -> Void = { c.iterate(400) { _ in a.sync { counter.slowIncrement() } } }
            checks.expect(finishes { if let outer { outer.sync(iterate) } else { iterate() } })
            checks.expect(a.sync { counter.value } == 400)
        }
    }

    @Test("an iteration runs inside the iterated queue, not inside the queues its caller is in")
    func iterationIsNotInsideCallersQueues() async throws {
        try await offPoolTest { checks in
            let a = GCDQueue(name: "test.iterate.inside.a")
            let b = GCDQueue(name: "test.iterate.inside.b", kind: .concurrent)
            let c = GCDQueue(name: "test.iterate.inside.c", kind: .concurrent)
            let seen = AtomicBox<[[Bool]]>([])
            checks.expect(
                finishes {
                    a.sync {
                        b.sync {
                            c.iterate(16) { _ in
                                let answer = [c.isCurrent, GCDQueue.current == c, a.isCurrent, b.isCurrent]
                                seen.mutate { $0.append(answer) }
                            }
                        }
                    }
                }
            )
            checks.expect(seen.value.count == 16)
            checks.expect(seen.value.allSatisfy { $0 == [true, true, false, false] }, "\(seen.value)")
        }
    }

    @Test("an iteration may sync onto a concurrent queue its caller is in: that neither waits nor breaks exclusion")
    func iterationSyncsOntoCallersConcurrentQueue() async throws {
        try await offPoolTest { checks in
            let outer = GCDQueue(name: "test.iterate.held.concurrent", kind: .concurrent)
            let c = GCDQueue(name: "test.iterate.held.c", kind: .concurrent)
            let count = AtomicBox(0)
            checks.expect(finishes { outer.sync { c.iterate(64) { _ in outer.sync { count.mutate { $0 += 1 } } } } })
            checks.expect(count.value == 64)
        }
    }

    @Test(
        "iterates nested ten deep by several callers at once end, each iteration run once: no one waits for a worker",
        arguments: [(callers: 1, queues: 2), (callers: 1, queues: 10), (callers: 8, queues: 2)]
    )
    func nestedIteratesEnd(callers: Int, queueCount: Int) async throws {
        // Ten levels of `iterate(2)` are 1,023 callers that each wait: if a caller only waited for workers of its
        // own, the pool would need a thread for every one of them at once, which Dispatch on Linux grants at about
        // one a second, and on a busy machine not at all. Nor may a caller's entry into its queue wait behind
        // workers that no thread has started (8 callers on 2 queues took 15-22 s so).
        try await offPoolTest { checks in
            let queues = (0..<queueCount).map { GCDQueue(name: "test.iterate.nested.\($0)", kind: .concurrent) }
            let reached = AtomicBox<[Int: Int]>([:])
            let leavesSoFar = AtomicBox(0)
            @Sendable func level(_ depth: Int, _ path: Int) {
                guard depth < 10 else {
                    reached.mutate { $0[path, default: 0] += 1 }
                    return leavesSoFar.mutate { $0 += 1 }
                }
                queues[depth % queueCount].iterate(2) { index in level(depth + 1, path * 2 + index) }
            }
            // A hang is leaves that stop coming, not a run that takes long: under ThreadSanitizer 8 callers on 2
            // queues reached 5,116 of their 8,192 leaves in the ten seconds a fixed deadline once allowed.
            checks.expect(runOnThreads(callers, progress: { leavesSoFar.value }) { caller in level(0, caller) })
            let leaves = reached.value
            let expected = callers * 1_024
            checks.expect(leaves.count == expected && leaves.values.allSatisfy { $0 == 1 }, "\(leaves.count) leaves")
        }
    }

    @Test("a serial queue's iterate called inside it runs inline, in order")
    func serialQueueInsideRunsInline() async throws {
        try await offPoolTest { checks in
            let a = GCDQueue(name: "test.iterate.serial.inline")
            let order = UnguardedCounter()
            let seen = AtomicBox<[Int]>([])
            checks.expect(
                finishes {
                    a.sync {
                        a.iterate(100) { index in
                            order.value += 1
                            seen.mutate { $0.append(index) }
                        }
                    }
                }
            )
            checks.expect(seen.value == Array(0..<100))
            checks.expect(order.value == 100)
        }
    }

    /// The shapes of a call that would need a serial queue its caller holds; each must trap, never run in parallel.
    enum HeldShape: Int, CaseIterable, Codable, Sendable {
        /// `a.sync { c.iterate { a.sync { } } }`: the repro.
        case direct
        /// `a.sync { c.iterate { b.sync { a.sync { } } } }`: through a sync the iteration made.
        case throughOwnSync
        /// `a.sync { c.iterate { d.iterate { a.sync { } } } }`: through a nested iterate.
        case throughNestedIterate
        /// `a.sync { c.iterate { a.iterate { } } }`: a serial queue's iterate is a sync onto it.
        case serialIterate
        /// `a.sync { c.iterate { GCDTask(queue: a).sync() } }`: a task's sync is a sync onto its queue.
        case taskSync
    }

    @Test(
        "an iteration that syncs onto a serial queue its caller is in traps instead of running in parallel",
        arguments: HeldShape.allCases
    )
    func iterationSyncOntoCallersSerialQueueTraps(shape: HeldShape) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [shape] in
            // The body blocks (syncs, waits): on a thread of its own, not on the exit test's task.
            await offPool {
                let a = GCDQueue(name: "test.iterate.held.a")
                let b = GCDQueue(name: "test.iterate.held.b")
                let c = GCDQueue(name: "test.iterate.held.c", kind: .concurrent)
                let d = GCDQueue(name: "test.iterate.held.d", kind: .concurrent)
                let counter = UnguardedCounter()
                a.sync {
                    c.iterate(64) { _ in
                        switch shape {
                        case .direct: a.sync { counter.slowIncrement() }
                        case .throughOwnSync: b.sync { a.sync { counter.slowIncrement() } }
                        case .throughNestedIterate: d.iterate(4) { _ in a.sync { counter.slowIncrement() } }
                        case .serialIterate: a.iterate(2) { _ in counter.slowIncrement() }
                        case .taskSync: GCDTask(queue: a) { counter.slowIncrement() }.sync()
                        }
                    }
                }
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains("GCDQueue.sync: queue 'test.iterate.held.a' is held by the caller of iterate"),
            "\(stderr)"
        )
    }

    @Test("an iteration that syncs onto a serial queue its caller is in traps also from the main thread")
    func iterationThroughMainTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let a = GCDQueue(name: "test.iterate.main.a")
            let c = GCDQueue(name: "test.iterate.main.c", kind: .concurrent)
            let finished = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                a.sync { c.iterate(4) { _ in GCDQueue.main.sync { a.sync {} } } }
                finished.signal()
            }
            _ = finished.wait(timeout: deadline())
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains("GCDQueue.sync: queue 'test.iterate.main.a' is held by the caller of iterate"),
            "\(stderr)"
        )
    }

    @Test("an iteration's barrierSync onto a concurrent queue its caller is in traps")
    func iterationBarrierOntoCallersConcurrentQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            // The body blocks (syncs, waits): on a thread of its own, not on the exit test's task.
            await offPool {
                let outer = GCDQueue(name: "test.iterate.held.barrier", kind: .concurrent)
                let c = GCDQueue(name: "test.iterate.held.barrier.c", kind: .concurrent)
                outer.sync { c.iterate(4) { _ in outer.barrierSync {} } }
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains("GCDQueue.barrierSync: queue 'test.iterate.held.barrier' is held by the caller of iterate"),
            "\(stderr)"
        )
    }
}
