import AtomicPrimitives
import Dispatch
import DispatchKit
import TestSupport
import Testing

/// Queues to nest `sync` and `iterate` calls through, and what `current` and `isCurrent` must say along any path.
///
/// The model is a stack of levels: every `sync` pushes its queue, whether it runs inline or not. `current` is the top;
/// a queue is current when it is the top, or, unless it is a global queue, at a level the code did not reach through
/// the caller of an `iterate` (a global queue counts only when the code runs in it directly). An `iterate` on a
/// concurrent queue the code is not inside runs its iterations on other threads, inside that queue and behind their
/// caller's levels, which they may not enter: a path skips a `sync` onto a serial queue held that way (it would trap).
private struct NestingModel: Sendable {
    /// One level of the stack.
    struct Level: Sendable {
        /// An index into ``queues``.
        let queue: Int
        /// Whether the code is at this level only through the caller of an `iterate`.
        let held: Bool
    }

    /// One step of a path.
    enum Step: Sendable {
        case sync(Int)
        /// `iterate(2)` on a concurrent queue of one's own; each iteration walks the rest of the path.
        case iterate(Int)
    }

    let queues: [GCDQueue]
    let names: [String]
    let isGlobal: [Bool]
    let isSerial: [Bool]

    init(_ entries: [(String, GCDQueue, kind: String)]) {
        self.queues = entries.map(\.1)
        self.names = entries.map(\.0)
        self.isGlobal = entries.map { $0.kind == "global" }
        self.isSerial = entries.map { $0.kind == "serial" }
    }

    /// Whether the code at `stack` is inside queue `index`, not only through the caller of an `iterate`.
    private func isInside(_ index: Int, at stack: [Level]) -> Bool {
        stack.last?.queue == index || (!self.isGlobal[index] && stack.contains { $0.queue == index && !$0.held })
    }

    /// What is wrong at `stack`, or nil if `current` and every `isCurrent` are right.
    func mismatch(at stack: [Level]) -> String? {
        let expected = stack.last.map { self.queues[$0.queue] }
        let current = GCDQueue.current
        var wrong: [String] = []
        if current != expected {
            let name = current.flatMap { queue in self.queues.firstIndex(of: queue).map { self.names[$0] } }
            wrong.append("current is \(name ?? (current == nil ? "nil" : "another queue"))")
        }
        for (index, queue) in self.queues.enumerated() {
            let expected = self.isInside(index, at: stack)
            if queue.isCurrent != expected { wrong.append("\(self.names[index]).isCurrent is \(!expected)") }
        }
        guard !wrong.isEmpty else { return nil }
        let levels = stack.map { self.names[$0.queue] + ($0.held ? " (held)" : "") }
        return "inside " + levels.joined(separator: " > ") + ": " + wrong.joined(separator: ", ")
    }

    /// Walks `path` from `stack`, checking before, inside and after each step; reports each mismatch.
    func walk(_ path: ArraySlice<Step>, from stack: [Level], _ report: @escaping @Sendable (String) -> Void) {
        guard let step = path.first else { return }
        let rest = path.dropFirst()
        switch step {
        case .sync(let index):
            let heldOnly = !self.isInside(index, at: stack) && stack.contains { $0.queue == index }
            if heldOnly && self.isSerial[index] { return self.walk(rest, from: stack, report) }
            let inner = stack + [Level(queue: index, held: false)]
            self.queues[index].sync { self.check(rest, at: inner, report) }
        case .iterate(let index):
            // Inline when the code is inside that queue; otherwise on other threads, behind the caller's levels.
            let inner =
                self.isInside(index, at: stack)
                ? stack + [Level(queue: index, held: false)]
                : stack.map { Level(queue: $0.queue, held: true) } + [Level(queue: index, held: false)]
            self.queues[index].iterate(2) { _ in self.check(rest, at: inner, report) }
        }
    }

    /// Checks at `stack`, walks `rest` from there, and checks again.
    private func check(_ rest: ArraySlice<Step>, at stack: [Level], _ report: @escaping @Sendable (String) -> Void) {
        if let wrong = self.mismatch(at: stack) { report(wrong) }
        self.walk(rest, from: stack, report)
        if let wrong = self.mismatch(at: stack) { report("after the inner steps, " + wrong) }
    }

    /// Walks `rounds` random paths of up to `depth` steps and returns the mismatches.
    ///
    /// Each path starts on a plain thread or in a block sent with `async` to one of the queues. With `iterating`, a
    /// step onto a concurrent queue of one's own is an `iterate` one time in three.
    func check(rounds: Int, depth: Int, iterating: Bool = false) -> [String] {
        let found = AtomicBox<[String]>([])
        let report: @Sendable (String) -> Void = { wrong in found.mutate { $0.append(wrong) } }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<rounds {
            let path = (0..<Int.random(in: 1...depth, using: &generator)).map { _ -> Step in
                let index = Int.random(in: 0..<self.queues.count, using: &generator)
                let customConcurrent = !self.isGlobal[index] && !self.isSerial[index]
                return iterating && customConcurrent && Int.random(in: 0..<3, using: &generator) == 0
                    ? .iterate(index) : .sync(index)
            }
            let start = Int.random(in: -1..<self.queues.count, using: &generator)
            let done = DispatchSemaphore(value: 0)
            let walk: @Sendable () -> Void = {
                let stack = start < 0 ? [] : [Level(queue: start, held: false)]
                if let wrong = self.mismatch(at: stack) { report("at the start, " + wrong) }
                self.walk(path[...], from: stack, report)
                done.signal()
            }
            if start < 0 { onNewThread(walk) } else { self.queues[start].async(walk) }
            if done.wait(timeout: deadline()) == .timedOut {
                report("deadlock along \(path)")
                break
            }
        }
        return found.value
    }
}

@Suite("GCDQueue.current and isCurrent along nested syncs", .timeLimit(.minutes(1)))
struct GCDQueueNestingTests {
    @Test("after a sync through a global queue, current is the innermost queue: a > default > a > b is b")
    func currentAfterGlobalHop() async throws {
        try await offPoolTest { checks in
            let a = GCDQueue(name: "test.nesting.hop.a")
            let b = GCDQueue(name: "test.nesting.hop.b")
            let seen = AtomicBox<[String]>([])
            let finished = runOnThreads(1) { _ in
                a.sync {
                    GCDQueue.default.sync {
                        a.sync {
                            b.sync {
                                let current = GCDQueue.current
                                let name = current == b ? "b" : current == a ? "a" : "other"
                                seen.mutate { $0 += [name, "b current: \(b.isCurrent)", "a current: \(a.isCurrent)"] }
                            }
                            seen.mutate { $0.append(GCDQueue.current == a ? "a" : "other") }
                        }
                        seen.mutate { $0.append(GCDQueue.current == .default ? "default" : "other") }
                    }
                }
            }
            checks.expect(finished)
            checks.expect(seen.value == ["b", "b current: true", "a current: true", "a", "default"])
        }
    }

    @Test("after hops from one global queue to another and back, current is that global queue, not an inline sync's")
    func currentAfterGlobalToGlobalHops() async throws {
        try await offPoolTest { checks in
            let c = GCDQueue(name: "test.nesting.hops.c", kind: .concurrent)
            let seen = AtomicBox<[Bool]>([])
            let finished = runOnThreads(1) { _ in
                c.sync {
                    GCDQueue.default.sync {
                        c.sync {
                            GCDQueue.utility.sync {
                                GCDQueue.default.sync {
                                    seen.mutate { $0 += [GCDQueue.current == .default, c.isCurrent] }
                                }
                                seen.mutate { $0.append(GCDQueue.current == .utility) }
                            }
                            seen.mutate { $0.append(GCDQueue.current == c) }
                        }
                    }
                }
            }
            checks.expect(finished)
            checks.expect(seen.value == [true, true, true, true])
        }
    }

    @Test("along random nested syncs through serial, concurrent and global queues, current is the model's top")
    func randomNestings() async {
        let model = NestingModel([
            ("s1", GCDQueue(name: "test.nesting.s1"), "serial"), ("s2", GCDQueue(name: "test.nesting.s2"), "serial"),
            ("c1", GCDQueue(name: "test.nesting.c1", kind: .concurrent), "concurrent"),
            ("c2", GCDQueue(name: "test.nesting.c2", kind: .concurrent), "concurrent"),
            ("default", .default, "global"), ("utility", .utility, "global"),
        ])
        // The random paths take the serial queues in both orders, on purpose: the checker reports each such pair,
        // and that report is right (two threads walking opposite paths at once would deadlock). Here the paths are
        // walked one at a time, each on one thread (and the iterations it starts), so the inversion never meets
        // itself: the test claims exactly those reports.
        let (wrong, _) = await DiagnosticReports.capture(where: isIntendedQueueInversion(namePrefix: "test.nesting.s"))
        {
            // it blocks on semaphores and syncs: off the cooperative pool
            await offPool { model.check(rounds: 1_000, depth: 8) }
        }
        #expect(wrong.isEmpty, "\(wrong.count) mismatches, first: \(wrong.prefix(5))")
    }

    @Test("along random nested syncs and iterates, each iteration is inside its queue and not inside its caller's")
    func randomNestingsWithIterate() async {
        let model = NestingModel([
            ("s1", GCDQueue(name: "test.nesting.iterate.s1"), "serial"),
            ("s2", GCDQueue(name: "test.nesting.iterate.s2"), "serial"),
            ("c1", GCDQueue(name: "test.nesting.iterate.c1", kind: .concurrent), "concurrent"),
            ("c2", GCDQueue(name: "test.nesting.iterate.c2", kind: .concurrent), "concurrent"),
            ("default", .default, "global"),
        ])
        // The random paths take the serial queues in both orders, on purpose: the checker reports each such pair,
        // and that report is right (two threads walking opposite paths at once would deadlock). Here the paths are
        // walked one at a time, each on one thread (and the iterations it starts), so the inversion never meets
        // itself: the test claims exactly those reports.
        let (wrong, _) = await DiagnosticReports.capture(
            where: isIntendedQueueInversion(namePrefix: "test.nesting.iterate.")
        ) {
            // it blocks on semaphores and syncs: off the cooperative pool
            await offPool { model.check(rounds: 500, depth: 7, iterating: true) }
        }
        #expect(wrong.isEmpty, "\(wrong.count) mismatches, first: \(wrong.prefix(5))")
    }

    @Test("along random nested syncs that also pass through the main queue, current is the model's top")
    func randomNestingsThroughMain() async {
        let model = NestingModel([
            ("s1", GCDQueue(name: "test.nesting.main.s1"), "serial"),
            ("c1", GCDQueue(name: "test.nesting.main.c1", kind: .concurrent), "concurrent"),
            ("main", .main, "serial"), ("default", .default, "global"),
        ])
        // The random paths take the serial queues in both orders, on purpose: the checker reports each such pair,
        // and that report is right (two threads walking opposite paths at once would deadlock). Here the paths are
        // walked one at a time, each on one thread (and the iterations it starts), so the inversion never meets
        // itself: the test claims exactly those reports.
        let (wrong, _) = await DiagnosticReports.capture(
            where: isIntendedQueueInversion(namePrefix: "test.nesting.main.", includingMain: true)
        ) {
            // it blocks on semaphores and syncs: off the cooperative pool
            await offPool { model.check(rounds: 150, depth: 6, iterating: true) }
        }
        #expect(wrong.isEmpty, "\(wrong.count) mismatches, first: \(wrong.prefix(5))")
    }
}
