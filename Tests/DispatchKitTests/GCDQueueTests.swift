import AtomicPrimitives
import Dispatch
import DispatchKit
import TestSupport
import Testing

@Suite("GCDQueue", .timeLimit(.minutes(1)))
struct GCDQueueTests {
    @Test(
        "current names main, each global queue and custom queues",
        arguments: [
            ("main", GCDQueue.main), ("userInitiated", .userInitiated), ("default", .default),
            ("utility", .utility), ("background", .background),
        ]
    )
    func currentOnStandardQueues(name: String, queue: GCDQueue) async throws {
        try await offPoolTest { checks in
            let seen = AtomicBox<(GCDQueue?, Bool)?>(nil)
            let done = DispatchSemaphore(value: 0)
            queue.async {
                seen.mutate { $0 = (GCDQueue.current, queue.isCurrent) }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(seen.value?.0 == queue, "current on \(name)")
            checks.expect(seen.value?.1 == true)
        }
    }

    @Test("userInteractive and userInitiated are one queue on Linux")
    func userInteractiveIsUserInitiated() {
        #if os(Linux)
        #expect(GCDQueue.userInteractive == GCDQueue.userInitiated)
        #endif
        #expect(GCDQueue.utility != GCDQueue.background)
    }

    @Test("current on a custom queue, nil on a raw serial queue and on a plain thread")
    func currentOnCustomAndRawQueues() async throws {
        try await offPoolTest { checks in
            let custom = GCDQueue(name: "test.custom")
            checks.expect(custom.sync { GCDQueue.current } == custom)
            checks.expect(custom.isCurrent == false)
            checks.expect(GCDQueue.main.isCurrent == false)
            let raw = DispatchQueue(label: "test.raw")
            checks.expect(raw.sync { GCDQueue.current } == nil)
            // A plain thread (the test itself runs on the cooperative pool, which dispatch's global workers serve).
            let onThread = AtomicBox<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            onNewThread {
                onThread.mutate { $0 = GCDQueue.current == nil }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(onThread.value == true)
            checks.expect(custom != GCDQueue(name: "test.custom"), "two queues with one name are two queues")
        }
    }

    @Test("a custom queue's entry does not keep the queue alive")
    func markerDoesNotRetainQueue() async throws {
        try await offPoolTest { checks in
            weak var weakQueue: DispatchQueue?
            do {
                let queue = GCDQueue(name: "test.lifetime")
                weakQueue = queue.dispatchQueue
                queue.sync {}
            }
            checks.expect(weakQueue == nil)
        }
    }

    @Test("sync returns the block's value and runs inline on its own queue, also through nested syncs")
    func syncGuard() async throws {
        try await offPoolTest { checks in
            let a = GCDQueue(name: "test.a")
            let b = GCDQueue(name: "test.b")
            checks.expect(a.sync { 41 + 1 } == 42)
            let nested = a.sync { b.sync { a.sync { "inline" } } }
            checks.expect(nested == "inline")
            let fromAsync = AtomicBox<String?>(nil)
            let done = DispatchSemaphore(value: 0)
            a.async {
                let value = b.sync { a.sync { a.isCurrent ? "inside a" : "not inside" } }
                fromAsync.mutate { $0 = value }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(fromAsync.value == "inside a")
        }
    }

    @Test("inside a raw queue that targets a DispatchKit queue, that queue is current and sync onto it runs inline")
    func syncThroughTargetingQueue() async throws {
        try await offPoolTest { checks in
            let target = GCDQueue(name: "test.target")
            let targeting = DispatchQueue(label: "test.targeting", target: target.dispatchQueue)
            let seen = AtomicBox<(current: Bool, isCurrent: Bool, synced: String?)?>(nil)
            let done = DispatchSemaphore(value: 0)
            targeting.async {
                // A raw `target.dispatchQueue.sync` here would deadlock: the target is held by this very block.
                let answer = (GCDQueue.current == target, target.isCurrent, target.sync { "inline" })
                seen.mutate { $0 = answer }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(seen.value?.current == true)
            checks.expect(seen.value?.isCurrent == true)
            checks.expect(seen.value?.synced == "inline")
        }
    }

    @Test("sync rethrows the block's error")
    func syncThrows() async throws {
        try await offPoolTest { checks in
            struct Boom: Error {}
            checks.expect(throws: Boom.self) { try GCDQueue(name: "test.throw").sync { throw Boom() } }
        }
    }

    @Test("async chains with <<<, arrays keep their order, and a serial queue keeps submission order")
    func asyncAndOperator() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.async")
            let log = AtomicBox<[Int]>([])
            let done = DispatchSemaphore(value: 0)
            queue <<< { log.mutate { $0.append(1) } } <<< { log.mutate { $0.append(2) } }
            queue.async([{ log.mutate { $0.append(3) } }, { log.mutate { $0.append(4) } }])
            queue.async { done.signal() }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(log.value == [1, 2, 3, 4])
        }
    }

    @Test("a barrier on a concurrent queue runs after the blocks before it and before the ones after")
    func barrier() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.barrier", kind: .concurrent)
            let log = AtomicBox<[String]>([])
            let group = DispatchGroup()
            for _ in 0..<8 {
                group.enter()
                queue <<< {
                    log.mutate { $0.append("before") }
                    group.leave()
                }
            }
            group.enter()
            queue |<| {
                log.mutate { $0.append("barrier") }
                group.leave()
            }
            for _ in 0..<8 {
                group.enter()
                queue <<< {
                    log.mutate { $0.append("after") }
                    group.leave()
                }
            }
            checks.expect(group.wait(timeout: deadline()) == .success)
            checks.expect(
                log.value == Array(repeating: "before", count: 8) + ["barrier"] + Array(repeating: "after", count: 8)
            )
        }
    }

    @Test("after waits at least the given time")
    func after() async throws {
        try await offPoolTest { checks in
            let start = DispatchTime.now()
            let elapsed = AtomicBox<UInt64>(0)
            let done = DispatchSemaphore(value: 0)
            GCDQueue(name: "test.after").after(0.05) {
                elapsed.mutate { $0 = DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(elapsed.value >= 50_000_000)
        }
    }

    @Test(
        "iterate runs every index once and returns after all of them, for counts below, at and above the core count",
        arguments: [GCDQueue.Kind.serial, .concurrent],
        [0, 1, 2, 3, 1000]
    )
    func iterate(kind: GCDQueue.Kind, count: Int) async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.iterate", kind: kind)
            let seen = AtomicBox<[Int]>([])
            queue.iterate(count) { index in seen.mutate { $0.append(index) } }
            checks.expect(seen.value.sorted() == Array(0..<count))
            let inline = queue.sync { () -> [Int] in
                let inner = AtomicBox<[Int]>([])
                queue.iterate(5) { index in inner.mutate { $0.append(index) } }
                return inner.value
            }
            checks.expect(inline.sorted() == [0, 1, 2, 3, 4], "called inside its own queue it runs inline")
        }
    }

    @Test("iterate with a negative count traps with a message naming the count")
    func iterateNegativeCountTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            GCDQueue(name: "test.iterate.negative", kind: .concurrent).iterate(-1) { _ in }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("GCDQueue.iterate: count must be 0 or more, got -1"))
    }
}

@Suite("GCDQueue.sync from the main queue", .timeLimit(.minutes(1)))
struct GCDQueueMainSyncTests {
    @Test("main.sync nested inside another queue's sync, called from the main queue, runs inline")
    func nestedMainSync() async throws {
        try await offPoolTest { checks in
            let other = GCDQueue(name: "test.main.nested")
            let result = AtomicBox<String?>(nil)
            checks.expect(
                onMainQueue {
                    let value = other.sync { GCDQueue.main.sync { "inline on main" } }
                    result.mutate { $0 = value }
                }
            )
            checks.expect(result.value == "inline on main")
        }
    }
}

@Suite("GCDQueue identity of global queues", .timeLimit(.minutes(1)))
struct GCDQueueGlobalIdentityTests {
    @Test("on a global queue, only that queue is current, whatever was asked before")
    func globalAfterUnrelatedQuery() async throws {
        try await offPoolTest { checks in
            let custom = GCDQueue(name: "test.cache.custom")
            let seen = AtomicBox<[Bool]>([])
            let done = DispatchSemaphore(value: 0)
            GCDQueue.utility.async {
                let answers = [
                    custom.isCurrent, custom.isCurrent, GCDQueue.utility.isCurrent, GCDQueue.default.isCurrent,
                ]
                seen.mutate { $0 = answers }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(seen.value == [false, false, true, false])
        }
    }
}

@Suite("GCDQueue.sync across threads and current along nested paths", .timeLimit(.minutes(1)))
struct GCDQueueLogicalNestingTests {
    /// Runs `body` on a new thread and waits for it: a deadlock inside fails the test instead of hanging it.
    private func finishes(_ body: @escaping @Sendable () -> Void) -> Bool {
        runOnThreads(1) { _ in body() }
    }

    @Test("a.sync { main.sync { a.sync {} } } runs inline on the main thread instead of deadlocking")
    func throughMainQueue() async throws {
        try await offPoolTest { checks in
            let a = GCDQueue(name: "test.nest.main.a")
            let ran = AtomicBox(false)
            checks.expect(
                finishes {
                    a.sync { GCDQueue.main.sync { a.sync { ran.mutate { $0 = true } } } }
                }
            )
            checks.expect(ran.value)
        }
    }

    @Test("a.sync { b.sync { c.sync { a.sync {} } } } across serial and concurrent queues runs inline")
    func deepChain() async throws {
        try await offPoolTest { checks in
            let a = GCDQueue(name: "test.nest.deep.a")
            let b = GCDQueue(name: "test.nest.deep.b", kind: .concurrent)
            let c = GCDQueue(name: "test.nest.deep.c")
            let ran = AtomicBox(false)
            checks.expect(finishes { a.sync { b.sync { c.sync { a.sync { b.sync { ran.mutate { $0 = true } } } } } } })
            checks.expect(ran.value)
        }
    }

    @Test("current is the innermost queue of an inline re-entry: a.sync { b.sync { a.sync { current } } } is a")
    func currentAfterInlineReentry() async throws {
        try await offPoolTest { checks in
            let a = GCDQueue(name: "test.current.a")
            let b = GCDQueue(name: "test.current.b")
            let seen = AtomicBox<[GCDQueue?]>([])
            checks.expect(
                finishes {
                    a.sync {
                        b.sync {
                            a.sync { seen.mutate { $0.append(GCDQueue.current) } }
                            seen.mutate { $0.append(GCDQueue.current) }
                        }
                        seen.mutate { $0.append(GCDQueue.current) }
                    }
                }
            )
            checks.expect(seen.value == [a, b, a])
        }
    }

    @Test("along random nested sync paths, current is always the innermost queue")
    func currentAlongRandomPaths() async {
        let queues = [
            GCDQueue(name: "test.random.a"), GCDQueue(name: "test.random.b"),
            GCDQueue(name: "test.random.c", kind: .concurrent), GCDQueue(name: "test.random.d"),
        ]
        let wrong = AtomicBox(0)
        let checked = AtomicBox(0)
        // The random paths take the serial queues in both orders, on purpose: the checker reports each such pair,
        // and that report is right (two threads walking opposite paths at once would deadlock). Here all paths are
        // walked one after another on one thread, so the inversion never meets itself: the test claims exactly
        // those reports.
        let (finished, _) = await DiagnosticReports.capture(where: isIntendedQueueInversion(namePrefix: "test.random."))
        {
            await offPool {  // `finishes` waits for its thread: off the cooperative pool
                self.finishes {
                    var generator = SystemRandomNumberGenerator()
                    for _ in 0..<500 {
                        let path = (0..<Int.random(in: 1...6, using: &generator)).map { _ in
                            queues.randomElement(using: &generator)!
                        }
                        Self.walk(path[...], wrong: wrong, checked: checked)
                    }
                }
            }
        }
        #expect(finished)
        #expect(checked.value > 500)
        #expect(wrong.value == 0)
    }

    private static func walk(_ path: ArraySlice<GCDQueue>, wrong: AtomicBox<Int>, checked: AtomicBox<Int>) {
        guard let next = path.first else { return }
        next.sync {
            if GCDQueue.current != next || !next.isCurrent { wrong.mutate { $0 += 1 } }
            checked.mutate { $0 += 1 }
            walk(path.dropFirst(), wrong: wrong, checked: checked)
            if GCDQueue.current != next { wrong.mutate { $0 += 1 } }
        }
    }

    @Test("inside a raw serial queue that targets a global queue, current is nil and the global is not current")
    func rawSerialTargetingGlobal() async throws {
        try await offPoolTest { checks in
            let raw = DispatchQueue(label: "test.raw.targeting.global", target: .global())
            let seen = AtomicBox<(GCDQueue?, Bool)?>(nil)
            raw.sync { seen.mutate { $0 = (GCDQueue.current, GCDQueue.default.isCurrent) } }
            checks.expect(seen.value?.0 == nil)
            checks.expect(seen.value?.1 == false)
            let direct = AtomicBox<GCDQueue?>(nil)
            let done = DispatchSemaphore(value: 0)
            GCDQueue.default.async {
                direct.mutate { $0 = GCDQueue.current }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(direct.value == GCDQueue.default, "directly on the global queue it is current")
        }
    }
}
