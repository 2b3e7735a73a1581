import Dispatch
import DispatchKit
import Foundation
import SafeValueCore
import Synchronization
import TestSupport
import Testing

/// "A command's closure is a critical section: no other command of the same value runs until it ends" and "the
/// blocks of one serial queue never run at the same time", checked with an ``OverlapDetector``: an unsynchronized
/// counter (lost updates, and a ThreadSanitizer report) plus an atomic `inside` flag.
@Suite("Contract properties: exclusion", .serialized, .timeLimit(propertyTimeLimit))
struct ExclusionPropertyTests {
    /// Burns a moment inside a section, so that an overlap has time to show.
    static func work(_ amount: Int) {
        var sink = 0
        for index in 0..<amount { sink &+= index }
        withExtendedLifetime(sink) {}
    }

    @Test("the command closures of one value never run at the same time, across all three schedules")
    func valueClosures() async {
        let failures = PropertyFailures()
        defer { report(failures) }
        let random = PropertyRun.random(10)
        let rounds = PropertyRun.rounds(4)
        let serial = DispatchQueue(label: "props.exclusion.value.serial")
        let concurrent = DispatchQueue(label: "props.exclusion.value.concurrent", attributes: .concurrent)
        for round in 0..<rounds {
            let value = QueueSafeValue(value: 0)
            let detector = OverlapDetector()
            let threads = 3
            let perThread = 40
            let tasks = 3
            let perTask = 40
            let issued = Atomic<Int>(0)
            let asyncRan = DispatchGroup()
            let seeds = (0..<(threads + tasks)).map { random.derived($0) }
            // The threads and the tasks issue at the same time.
            async let threadsDone = offPool {
                runOnThreads(threads, progress: { detector.progress }) { index in
                    var random = seeds[index]
                    for _ in 0..<perThread {
                        let highest = random.chance(50)
                        let amount = Int.random(in: 0..<300, using: &random)
                        issued.add(1, ordering: .relaxed)
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0:
                            let command = highest ? value.wait.highestPriority : value.wait.lowestPriority
                            command.set { count in detector.section { Self.work(amount) } }
                        case 1:
                            let command = highest ? value.wait.highestPriority : value.wait.lowestPriority
                            command.set(manualCompletion: { _, done in
                                detector.section { Self.work(amount) }
                                done()
                            })
                        case 2:
                            let schedule = value.async(performIn: random.chance(50) ? serial : concurrent)
                            let command = highest ? schedule.highestPriority : schedule.lowestPriority
                            asyncRan.enter()
                            command.set(accessClosure: { _ in detector.section { Self.work(amount) } }) { _ in
                                asyncRan.leave()
                            }
                        default:
                            // done() from another thread, later: the section lasts until then.
                            let schedule = value.async(performIn: concurrent)
                            let command = highest ? schedule.highestPriority : schedule.lowestPriority
                            asyncRan.enter()
                            command.set(
                                manualCompletion: { _, done in
                                    detector.begin()
                                    DispatchQueue.global().async {
                                        Self.work(amount)
                                        detector.end()
                                        done()
                                    }
                                },
                                completion: { _ in asyncRan.leave() }
                            )
                        }
                    }
                }
            }
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<tasks {
                    var random = seeds[threads + index]
                    group.addTask {
                        for _ in 0..<perTask {
                            let highest = random.chance(50)
                            let amount = Int.random(in: 0..<300, using: &random)
                            let command = highest ? value.suspend.highestPriority : value.suspend.lowestPriority
                            await command.set { _ in detector.section { Self.work(amount) } }
                        }
                    }
                }
            }
            let threadsFinished = await threadsDone
            let asyncDone = await offPool { waitForProgress(asyncRan) { detector.progress } }
            failures.expect(threadsFinished && asyncDone, "\(PropertyRun.failure("every command runs", round: round))")
            failures.expect(
                detector.overlaps == 0,
                "\(PropertyRun.failure("command closures of one value never overlap", round: round)): \(detector.overlaps) overlaps"
            )
            failures.expect(
                detector.count == threads * perThread + tasks * perTask,
                "lost updates: unsynchronized sections"
            )
            if detector.overlaps > 0 { return }
        }
    }

    @Test("the blocks of one serial GCDQueue never run at the same time: sync, nested sync, async, <<<, barrierSync")
    func serialQueueBlocks() async {
        let failures = PropertyFailures()
        await offPool {
            let random = PropertyRun.random(11)
            let rounds = PropertyRun.rounds(4)
            for round in 0..<rounds {
                let serial = GCDQueue(name: "props.exclusion.a.\(round)")
                let other = GCDQueue(name: "props.exclusion.b.\(round)")
                let concurrent = GCDQueue(name: "props.exclusion.c.\(round)", kind: .concurrent)
                let detector = OverlapDetector()
                let sent = DispatchGroup()
                let sections = Atomic<Int>(0)
                let seeds = (0..<3).map { random.derived($0) }
                let finished = runOnThreads(3, progress: { detector.progress }) { index in
                    var random = seeds[index]
                    for _ in 0..<60 {
                        let amount = Int.random(in: 0..<400, using: &random)
                        let block = { @Sendable in detector.section { Self.work(amount) } }
                        // Nesting only ever goes from `serial` into the others and back, never the other way round, so
                        // the workload itself has no lock-order cycle.
                        switch Int.random(in: 0..<9, using: &random) {
                        case 0:
                            serial.sync(block)
                            sections.add(1, ordering: .relaxed)
                        case 1:
                            sent.enter()
                            serial.async {
                                block()
                                sent.leave()
                            }
                            sections.add(1, ordering: .relaxed)
                        case 2:
                            sent.enter()
                            serial <<< {
                                block()
                                sent.leave()
                            }
                            sections.add(1, ordering: .relaxed)
                        case 3:
                            serial.sync { other.sync { serial.sync(block) } }
                            sections.add(1, ordering: .relaxed)
                        case 4:
                            concurrent.barrierSync { serial.sync(block) }
                            sections.add(1, ordering: .relaxed)
                        case 5:
                            concurrent.sync { serial.sync(block) }
                            sections.add(1, ordering: .relaxed)
                        case 6:
                            concurrent.iterate(3) { _ in serial.sync(block) }
                            sections.add(3, ordering: .relaxed)
                        case 7:
                            serial.sync {
                                block()
                                serial.sync(block)
                            }
                            sections.add(2, ordering: .relaxed)
                        default:
                            serial.barrierSync(block)
                            sections.add(1, ordering: .relaxed)
                        }
                    }
                }
                let drained = waitForProgress(sent) { detector.progress }
                failures.expect(
                    finished && drained,
                    "\(PropertyRun.failure("every block runs (deadlock?)", round: round))"
                )
                failures.expect(
                    detector.overlaps == 0,
                    "\(PropertyRun.failure("blocks of one serial queue never overlap", round: round)): \(detector.overlaps)"
                )
                failures.expect(
                    detector.count == sections.load(ordering: .relaxed),
                    "lost updates: unsynchronized blocks"
                )
                if detector.overlaps > 0 { return }
            }
        }
        report(failures)
    }

    /// The exit code of the `iterate` child when two blocks of the serial queue overlapped.
    static let overlapExitCode: CInt = 9
    /// The exit code of the `iterate` child when they never did.
    static let exclusiveExitCode: CInt = 7

    /// The workers of `a.sync { c.iterate(n) { _ in a.sync { … } } }` never run two blocks of `a` at once.
    ///
    /// Honouring
    /// that here may mean a trap with a message (each worker would wait for `a`, which the caller holds), so the
    /// workload runs in a child process: it passes if the child either ran every block alone (exit 7) or trapped;
    /// it fails if two blocks of `a` overlapped (exit 9).
    @Test("iterate on a concurrent queue from inside a serial queue's sync never runs two of its blocks at once")
    func iterateInsideSync() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            // On a thread of its own: iterate's workers need the pool threads a blocked test task would hold.
            let overlaps = await offPool {
                var overlaps = 0
                for round in 0..<PropertyRun.rounds(10) {
                    let serial = GCDQueue(name: "props.iterate.a.\(round)")
                    let concurrent = GCDQueue(name: "props.iterate.c.\(round)", kind: .concurrent)
                    let detector = OverlapDetector()
                    serial.sync {
                        concurrent.iterate(64) { _ in
                            // A pause inside the block widens the window in which a second one could start.
                            serial.sync { detector.section { Thread.sleep(forTimeInterval: 0.000_05) } }
                        }
                    }
                    overlaps += detector.overlaps
                }
                return overlaps
            }
            if overlaps > 0 {
                FileHandle.standardError.write(
                    Data("\(PropertyRun.failure("blocks of one serial queue never overlap")): \(overlaps)\n".utf8)
                )
            }
            exit(overlaps > 0 ? ExclusionPropertyTests.overlapExitCode : ExclusionPropertyTests.exclusiveExitCode)
        }
        #expect(
            result?.exitStatus != .exitCode(Self.overlapExitCode),
            "\(PropertyRun.failure("serial blocks never overlap (iterate in sync)")): \(text(result?.standardErrorContent))"
        )
    }

    /// GCDQueue: inside nested `sync` calls, ``GCDQueue/current`` is the innermost queue, whatever the path.
    ///
    /// Random paths of `sync` calls through two serial queues, a concurrent one and a global one, coming back to
    /// queues already on the path; at every depth the current queue must be the one whose block runs, and every
    /// custom queue on the path must report `isCurrent`.
    @Test("inside nested syncs through serial, concurrent and global queues, current is the innermost queue")
    func currentIsInnermost() async {
        let failures = PropertyFailures()
        var random = PropertyRun.random(13)
        // Serial queues are entered in one order, a before b (the other order is a lock-order inversion, which
        // the checker rightly reports); coming back to a queue already on the path is free.
        let paths = (0..<PropertyRun.rounds(200)).map { _ in
            var path: [Int] = []
            for _ in 0..<Int.random(in: 1...5, using: &random) {
                let next = Int.random(in: 0..<4, using: &random)
                path.append(next == 0 && path.contains(1) && !path.contains(0) ? 2 : next)
            }
            return path
        }
        await offPool {
            let queues = [
                GCDQueue(name: "props.current.a"), GCDQueue(name: "props.current.b"),
                GCDQueue(name: "props.current.c", kind: .concurrent), GCDQueue.default,
            ]
            let names = ["a", "b", "c (concurrent)", "global"]
            for (round, path) in paths.enumerated() {
                func descend(_ depth: Int) {
                    guard depth < path.count else { return }
                    queues[path[depth]].sync {
                        let innermost = queues[path[depth]]
                        let current = GCDQueue.current
                        let customsOnPath = path[...depth].filter { $0 < 3 }
                        let notCurrent = customsOnPath.filter { !queues[$0].isCurrent }
                        if current?.dispatchQueue !== innermost.dispatchQueue || !notCurrent.isEmpty {
                            let shown = current.map { queue in
                                names[queues.firstIndex { $0.dispatchQueue === queue.dispatchQueue } ?? 0]
                            }
                            failures.record(
                                PropertyRun.failure("current is the innermost queue of nested syncs", round: round)
                                    + ": path \(path[...depth].map { names[$0] }), current \(shown ?? "nil"), "
                                    + "not isCurrent: \(notCurrent.map { names[$0] })"
                            )
                            return
                        }
                        descend(depth + 1)
                    }
                }
                descend(0)
                if !failures.all.isEmpty { return }
            }
        }
        report(failures)
    }
}
