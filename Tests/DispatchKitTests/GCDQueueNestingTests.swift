import Dispatch
import DispatchKit
import TestSupport
import Testing

/// Queues to nest `sync` calls through, and what `current` and `isCurrent` must say along any path through them.
///
/// The model is a stack: every `sync` pushes its queue, whether it runs inline or not. `current` is the top; a queue is
/// current when it is the top, or, unless it is a global queue, anywhere in the stack (a global queue counts only
/// when the code runs in it directly).
private struct NestingModel: Sendable {
    let queues: [GCDQueue]
    let names: [String]
    let isGlobal: [Bool]

    init(_ entries: [(String, GCDQueue, isGlobal: Bool)]) {
        self.queues = entries.map(\.1)
        self.names = entries.map(\.0)
        self.isGlobal = entries.map(\.isGlobal)
    }

    /// What is wrong at `stack` (indexes into ``queues``), or nil if `current` and every `isCurrent` are right.
    func mismatch(at stack: [Int]) -> String? {
        let expected = stack.last.map { self.queues[$0] }
        let current = GCDQueue.current
        var wrong: [String] = []
        if current != expected {
            let name = current.flatMap { queue in self.queues.firstIndex(of: queue).map { self.names[$0] } }
            wrong.append("current is \(name ?? (current == nil ? "nil" : "another queue"))")
        }
        for (index, queue) in self.queues.enumerated() {
            let expected = stack.last == index || (!self.isGlobal[index] && stack.contains(index))
            if queue.isCurrent != expected { wrong.append("\(self.names[index]).isCurrent is \(!expected)") }
        }
        guard !wrong.isEmpty else { return nil }
        return "inside " + stack.map { self.names[$0] }.joined(separator: " > ") + ": " + wrong.joined(separator: ", ")
    }

    /// Syncs along `path` from `stack`, checking before, inside and after each step; reports each mismatch.
    func walk(_ path: ArraySlice<Int>, from stack: [Int], _ report: (String) -> Void) {
        guard let next = path.first else { return }
        let inner = stack + [next]
        self.queues[next].sync {
            if let wrong = self.mismatch(at: inner) { report(wrong) }
            self.walk(path.dropFirst(), from: inner, report)
            if let wrong = self.mismatch(at: inner) { report("after the inner syncs, " + wrong) }
        }
    }

    /// Walks `rounds` random paths of up to `depth` syncs, each from a random start: a plain thread, or a block sent
    /// with `async` to one of the queues; returns the mismatches.
    func check(rounds: Int, depth: Int) -> [String] {
        let found = AtomicBox<[String]>([])
        let report: @Sendable (String) -> Void = { wrong in found.mutate { $0.append(wrong) } }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<rounds {
            let path = (0..<Int.random(in: 1...depth, using: &generator)).map { _ in
                Int.random(in: 0..<self.queues.count, using: &generator)
            }
            let start = Int.random(in: -1..<self.queues.count, using: &generator)
            let done = DispatchSemaphore(value: 0)
            let walk: @Sendable () -> Void = {
                let stack = start < 0 ? [] : [start]
                if let wrong = self.mismatch(at: stack) { report("at the start, " + wrong) }
                self.walk(path[...], from: stack, report)
                done.signal()
            }
            if start < 0 { onNewThread(walk) } else { self.queues[start].async(walk) }
            if done.wait(timeout: deadline()) == .timedOut {
                report("deadlock along " + path.map { self.names[$0] }.joined(separator: " > "))
                break
            }
        }
        return found.value
    }
}

@Suite("GCDQueue.current and isCurrent along nested syncs", .timeLimit(.minutes(1)))
struct GCDQueueNestingTests {
    @Test("after a sync through a global queue, current is the innermost queue: a > default > a > b is b")
    func currentAfterGlobalHop() {
        let a = GCDQueue(name: "test.nesting.hop.a")
        let b = GCDQueue(name: "test.nesting.hop.b")
        let seen = AtomicBox<[String]>([])
        let finished = runOnThreads(1, seconds: 10) { _ in
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
        #expect(finished)
        #expect(seen.value == ["b", "b current: true", "a current: true", "a", "default"])
    }

    @Test("after hops from one global queue to another and back, current is that global queue, not an inline sync's")
    func currentAfterGlobalToGlobalHops() {
        let c = GCDQueue(name: "test.nesting.hops.c", kind: .concurrent)
        let seen = AtomicBox<[Bool]>([])
        let finished = runOnThreads(1, seconds: 10) { _ in
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
        #expect(finished)
        #expect(seen.value == [true, true, true, true])
    }

    @Test("along random nested syncs through serial, concurrent and global queues, current is the model's top")
    func randomNestings() {
        let model = NestingModel([
            ("s1", GCDQueue(name: "test.nesting.s1"), false), ("s2", GCDQueue(name: "test.nesting.s2"), false),
            ("c1", GCDQueue(name: "test.nesting.c1", kind: .concurrent), false),
            ("c2", GCDQueue(name: "test.nesting.c2", kind: .concurrent), false),
            ("default", .default, true), ("utility", .utility, true),
        ])
        let wrong = model.check(rounds: 1_000, depth: 8)
        #expect(wrong.isEmpty, "\(wrong.count) mismatches, first: \(wrong.prefix(5))")
    }

    @Test("along random nested syncs that also pass through the main queue, current is the model's top")
    func randomNestingsThroughMain() {
        let model = NestingModel([
            ("s1", GCDQueue(name: "test.nesting.main.s1"), false),
            ("c1", GCDQueue(name: "test.nesting.main.c1", kind: .concurrent), false),
            ("main", .main, false), ("default", .default, true),
        ])
        let wrong = model.check(rounds: 150, depth: 6)
        #expect(wrong.isEmpty, "\(wrong.count) mismatches, first: \(wrong.prefix(5))")
    }
}
