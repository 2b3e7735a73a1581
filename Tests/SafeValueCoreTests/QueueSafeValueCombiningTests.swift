import AtomicPrimitives
import Dispatch
import Foundation
import SafeValueCore
import TestSupport
import Testing

/// Flat combining: a waiting `get()` or `set(newValue:)`, `wait` or `suspend`, is applied by the releasing holder.
///
/// The contract stays: strict priority, FIFO within a priority, one thread's commands in issue order, a
/// suspended command cancelled before it is applied never runs, the value outlives the last applied command.
@Suite("QueueSafeValue: combined commands keep the contract", .timeLimit(.minutes(2)))
struct QueueSafeValueCombiningTests {
    /// The kinds of command a test mixes: those that pass no closure are combined when they wait.
    enum Kind: CaseIterable {
        case waitSetNewValue, waitGet, waitClosure, suspendSetNewValue, suspendGet, suspendClosure, asyncClosure

        /// Whether the command writes its own id.
        var writes: Bool { self != .waitGet && self != .suspendGet }
        /// Whether the command sees the value it came to (its predecessor's id).
        var observes: Bool { self != .waitSetNewValue && self != .suspendSetNewValue }
    }

    /// What a command saw: the id of the last command that wrote the value before it ran.
    final class Observations: Sendable {
        private let seen = AtomicBox<[Int: Int]>([:])
        func record(_ id: Int, saw previous: Int) { self.seen.mutate { $0[id] = previous } }
        var all: [Int: Int] { self.seen.value }
    }

    /// Issues one command of `kind` on `value`; `done` is left once it ran.
    static func issue(
        _ kind: Kind,
        id: Int,
        highest: Bool,
        on value: QueueSafeValue<Int>,
        queue: DispatchQueue,
        observations: Observations,
        done: DispatchGroup
    ) {
        done.enter()
        switch kind {
        case .waitSetNewValue, .waitGet, .waitClosure:
            onNewThread {
                let command = highest ? value.wait.highestPriority : value.wait.lowestPriority
                switch kind {
                case .waitSetNewValue: _ = command.set(newValue: id)
                case .waitGet:
                    if case .success(let previous) = command.get() { observations.record(id, saw: previous) }
                default:
                    command.set { current in
                        observations.record(id, saw: current)
                        current = id
                    }
                }
                done.leave()
            }
        case .suspendSetNewValue, .suspendGet, .suspendClosure:
            Task.detached {
                let command = highest ? value.suspend.highestPriority : value.suspend.lowestPriority
                switch kind {
                case .suspendSetNewValue: await command.set(newValue: id)
                case .suspendGet:
                    if case .success(let previous) = await command.get() { observations.record(id, saw: previous) }
                default:
                    await command.set { current in
                        observations.record(id, saw: current)
                        current = id
                    }
                }
                done.leave()
            }
        case .asyncClosure:
            let schedule = value.async(performIn: queue)
            let command = highest ? schedule.highestPriority : schedule.lowestPriority
            command.set(accessClosure: { current in
                observations.record(id, saw: current)
                current = id
                done.leave()
            })
        }
    }

    @Test(
        "commands queued from many threads and tasks, combined ones mixed with closure and async ones, run by priority, then in queue order",
        arguments: [8, 16]
    )
    func queuedOrder(threads: Int) async throws {
        try await offPoolTest { checks in
            var random = PropertyRun.random(0x26_01 &+ UInt64(threads))
            let holdQueue = DispatchQueue(label: "test.combining.hold")
            let asyncQueue = DispatchQueue(label: "test.combining.async")
            for round in 0..<PropertyRun.rounds(12) {
                let value = QueueSafeValue(value: 0)
                let hold = ValueHold(value, on: holdQueue)
                try checks.require(hold.isHolding())
                let observations = Observations()
                let done = DispatchGroup()
                var commands: [(id: Int, kind: Kind, highest: Bool)] = []
                // One command per thread or task, each queued before the next is issued: the queue's order is known.
                for id in 1...threads {
                    let kind = Kind.allCases.randomElement(using: &random)!
                    let highest = random.chance(50)
                    let queued = value.waitingCommandCount
                    Self.issue(
                        kind,
                        id: id,
                        highest: highest,
                        on: value,
                        queue: asyncQueue,
                        observations: observations,
                        done: done
                    )
                    try checks.require(eventually { value.waitingCommandCount == queued + 1 })
                    commands.append((id, kind, highest))
                }
                hold.release()
                try checks.require(waitForProgress(done) { observations.all.count })
                // The contract's order: every highest command, in queue order, then every lowest one.
                let order = commands.filter(\.highest) + commands.filter { !$0.highest }
                var last = 0
                var expected: [Int: Int] = [:]
                for command in order {
                    if command.kind.observes { expected[command.id] = last }
                    if command.kind.writes { last = command.id }
                }
                let seen = observations.all
                checks.expect(
                    seen == expected,
                    """
                    \(PropertyRun.failure("priority, then queue order, with combined commands", round: round)): \
                    queued \(commands.map { "\($0.id)\($0.highest ? "H" : "L"):\($0.kind)" }), \
                    expected each to see \(expected.sorted { $0.key < $1.key }), saw \(seen.sorted { $0.key < $1.key })
                    """
                )
                checks.expect(value.wait.lowestPriority.get() == .success(last))
                if seen != expected { return }
            }
        }
    }

    /// A writer's id and the number of its write, in one `Int`.
    static func stamp(thread: Int, write: Int) -> Int { thread << 32 | write }

    @Test(
        "threads hammering one value with combined, closure and async commands: each thread's commands apply in issue order, and every read sees the last write",
        arguments: [8, 16]
    )
    func hammerKeepsEachThreadsOrder(threads: Int) async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let perThread = 400
            // What each thread saw, in the order its commands ran.
            let logs = (0..<threads).map { _ in AtomicBox<[Int]>([]) }
            let violations = AtomicBox<[String]>([])
            let seeds = (0..<threads).map { PropertyRun.random(0x26_02).derived($0) }
            let asyncDone = DispatchGroup()
            let finished = runOnThreads(threads) { thread in
                var random = seeds[thread]
                // Half the threads at each priority, one priority per thread: its commands keep their issue order.
                let highest = thread.isMultiple(of: 2)
                let waits = highest ? value.wait.highestPriority : value.wait.lowestPriority
                let asyncQueue = DispatchQueue(label: "test.combining.hammer.\(thread)")
                let asyncSchedule = value.async(performIn: asyncQueue)
                let asyncs = highest ? asyncSchedule.highestPriority : asyncSchedule.lowestPriority
                let log = logs[thread]
                var lastWrite = 0
                for write in 1...perThread {
                    let stamp = Self.stamp(thread: thread, write: write)
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<4:
                        waits.set(newValue: stamp)
                        lastWrite = write
                    case 4..<7:
                        guard case .success(let seen) = waits.get() else { continue }
                        log.mutate { $0.append(seen) }
                        // A read sees this thread's last write, or a later write of another thread.
                        if seen >> 32 == thread && seen & 0xFFFF_FFFF != lastWrite {
                            violations.mutate {
                                $0.append("thread \(thread) wrote \(lastWrite), then read \(seen & 0xFFFF_FFFF)")
                            }
                        }
                    case 7..<9:
                        waits.set { current in
                            log.mutate { $0.append(current) }
                            current = stamp
                        }
                        lastWrite = write
                    default:
                        asyncDone.enter()
                        asyncs.set(accessClosure: { current in
                            log.mutate { $0.append(current) }
                            current = stamp
                            asyncDone.leave()
                        })
                        lastWrite = write
                    }
                }
            }
            checks.expect(finished)
            checks.expect(asyncDone.wait(timeout: deadline()) == .success)
            checks.expect(violations.value.isEmpty, "\(violations.value.prefix(5))")
            // Each thread's writes apply in issue order: what any one thread sees of a writer never goes back.
            for (observer, log) in logs.enumerated() {
                var newest: [Int: Int] = [:]
                for seen in log.value where seen != 0 {
                    let writer = seen >> 32
                    let write = seen & 0xFFFF_FFFF
                    if let before = newest[writer], write < before {
                        checks.expect(
                            Bool(false),
                            "thread \(observer) saw write \(write) of thread \(writer) after its write \(before)"
                        )
                        return
                    }
                    newest[writer] = write
                }
            }
        }
    }

    /// A value whose destructions are counted, by id, in the order they happen.
    final class Token: Sendable {
        let id: Int
        let destroyed: AtomicBox<[Int]>
        init(_ id: Int, destroyed: AtomicBox<[Int]>) {
            self.id = id
            self.destroyed = destroyed
        }
        deinit { self.destroyed.mutate { $0.append(self.id) } }
    }

    @Test(
        "the holder released while combined commands wait: each still applies, and each value is destroyed exactly once, the last after them"
    )
    func holderReleasedWhileCombinedCommandsWait() async throws {
        try await offPoolTest { checks in
            var random = PropertyRun.random(0x26_03)
            let holdQueue = DispatchQueue(label: "test.combining.release")
            for round in 0..<PropertyRun.rounds(20) {
                let destroyed = AtomicBox<[Int]>([])
                var value: QueueSafeValue<Token>? = QueueSafeValue(value: Token(0, destroyed: destroyed))
                let hold = ValueHold(value!, on: holdQueue)
                try checks.require(hold.isHolding())
                let done = DispatchGroup()
                let results = AtomicBox<[Int: Bool]>([:])
                var queuedOrder: [(id: Int, highest: Bool)] = []
                for id in 1...Int.random(in: 2...12, using: &random) {
                    let highest = random.chance(50)
                    let queued = value!.waitingCommandCount
                    let command = highest ? value!.wait.highestPriority : value!.wait.lowestPriority
                    done.enter()
                    onNewThread {
                        let succeeded = command.set(newValue: Token(id, destroyed: destroyed)).map { _ in () }
                        results.mutate { $0[id] = (try? succeeded.get()) != nil }
                        done.leave()
                    }
                    try checks.require(eventually { value!.waitingCommandCount == queued + 1 })
                    queuedOrder.append((id, highest))
                }
                // A kept command object keeps only a husk: the value must still be destroyed once the commands end.
                let husk = value!.wait.lowestPriority
                value = nil  // the holder goes while the commands wait; only they keep the value now
                checks.expect(destroyed.value.isEmpty)
                hold.release()
                try checks.require(done.wait(timeout: deadline()) == .success)
                checks.expect(
                    results.value.count == queuedOrder.count && results.value.values.allSatisfy { $0 },
                    "round \(round): every command issued before the release succeeds"
                )
                // Every value is destroyed exactly once: a replaced one by the thread of the set that replaced it
                // or of the set that brought it, whichever lets go last (so their order is the wake-ups'), the last
                // when the turn retired after it.
                checks.expect(eventually { destroyed.value.count == queuedOrder.count + 1 })
                let order = destroyed.value
                checks.expect(order.sorted() == Array(0...queuedOrder.count), "round \(round): destroyed \(order)")
                let late = husk.get().map { _ in 0 }
                checks.expect(late == .failure(.valueContainerDeinited))
                if order.sorted() != Array(0...queuedOrder.count) { return }
            }
        }
    }

    /// Tasks whose combined commands a releaser applied read their results.
    ///
    /// Meaningful in the gate's ThreadSanitizer stage: such a task may be resumed before it finished suspending, an
    /// order the runtime keeps with atomics ThreadSanitizer does not see, so the result's hand-over must be an edge of
    /// our own. Everywhere, each read must be an array one `set` wrote whole.
    @Test("tasks read what combined sets wrote, whole, without a race")
    func combinedResultsAreHandedOverToTasks() async {
        let value = QueueSafeValue(value: [0, 0, 0])
        let torn = AtomicBox(0)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for step in 0..<400 {
                        if (task + step).isMultiple(of: 2) {
                            let stamp = task * 1_000 + step
                            _ = await value.suspend.lowestPriority.set(newValue: [stamp, stamp, stamp])
                        } else if case .success(let seen) = await value.suspend.lowestPriority.get(),
                            Set(seen).count != 1
                        {
                            torn.mutate { $0 += 1 }
                        }
                        await Task.yield()
                    }
                }
            }
        }
        #expect(torn.value == 0)
    }

    /// A value whose `deinit` records, under its number, the thread it ran on.
    final class ThreadRecordingValue: Sendable {
        let number: Int
        let deaths: AtomicBox<[Int: UInt]>

        init(_ number: Int, deaths: AtomicBox<[Int: UInt]>) {
            self.number = number
            self.deaths = deaths
        }

        deinit {
            let thread = currentThreadID()
            self.deaths.mutate { [number] in $0[number] = thread }
        }
    }

    /// The releaser may be any command's thread, a queue's or an actor's, holding its own locks: a `deinit` of the
    /// user's must not run there (it could `sync` onto that queue, or take that lock), but where an uncombined `set`
    /// runs it, on the thread that issued the `set`.
    @Test("a combined set's replaced value is destroyed on the thread that issued the set, not on the releaser's")
    func replacedValueDiesOnItsIssuersThread() async throws {
        try await offPoolTest { checks in
            let deaths = AtomicBox<[Int: UInt]>([:])
            let issuers = AtomicBox<[Int: UInt]>([:])
            let value = QueueSafeValue(value: ThreadRecordingValue(0, deaths: deaths))
            let hold = ValueHold(value, on: DispatchQueue(label: "test.combining.deinit"))
            try checks.require(hold.isHolding())
            let done = DispatchGroup()
            for step in 1...4 {
                let queued = value.waitingCommandCount
                done.enter()
                onNewThread {
                    issuers.mutate { $0[step] = currentThreadID() }
                    value.wait.lowestPriority.set(newValue: ThreadRecordingValue(step, deaths: deaths))
                    done.leave()
                }
                try checks.require(eventually { value.waitingCommandCount == queued + 1 })
            }
            hold.release()  // this thread applies the four sets, in their order
            try checks.require(done.wait(timeout: deadline()) == .success)
            // The value numbered n was brought by the set of step n (the first by this thread, which holds it no
            // more) and replaced by the set of step n + 1: it dies on whichever of their threads lets go of it last.
            for number in 0..<4 {
                let owners = [issuers.value[number], issuers.value[number + 1]].compactMap { $0 }
                checks.expect(
                    deaths.value[number].map(owners.contains) == true,
                    "value \(number) died on \(deaths.value[number].map(String.init) ?? "no thread"), not on a thread of the sets that brought or replaced it (\(owners))"
                )
            }
        }
    }

    @Test("a combined get sees the set queued just before it, and a set queued after a get is not seen by it")
    func combinedGetSeesThePreviousSet() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 0)
            let hold = ValueHold(value, on: DispatchQueue(label: "test.combining.get"))
            try checks.require(hold.isHolding())
            let reads = AtomicBox<[Int: Int]>([:])
            let done = DispatchGroup()
            for step in 1...6 {
                let queued = value.waitingCommandCount
                done.enter()
                onNewThread {
                    if step.isMultiple(of: 2) {
                        if case .success(let seen) = value.wait.lowestPriority.get() {
                            reads.mutate { $0[step] = seen }
                        }
                    } else {
                        value.wait.lowestPriority.set(newValue: step)
                    }
                    done.leave()
                }
                try checks.require(eventually { value.waitingCommandCount == queued + 1 })
            }
            hold.release()
            try checks.require(done.wait(timeout: deadline()) == .success)
            checks.expect(reads.value == [2: 1, 4: 3, 6: 5])
        }
    }
}

/// A suspended `set(newValue:)` cancelled at each moment of its combining.
///
/// The schedule chaos's point observer cancels its task exactly at the k-th hand-over point after the hold lets go.
/// Before the releaser took it out of the queue, it fails with `cancelled` and is never applied; after, it is applied
/// and returns its result. Each run in a process of its own, since schedule chaos and its observer are global.
@Suite("QueueSafeValue: a cancellation racing combining", .timeLimit(.minutes(2)))
struct QueueSafeValueCombiningCancellationTests {
    /// Cancels a task when the value's hand-over points, on whichever thread releases the turn, reach the k-th since
    /// it was armed. (The hold's release may run on its queue's thread, if the hold's closure has not yet returned.)
    final class CancelAtPoint: Sendable {
        private let state = AtomicBox<(remaining: Int, task: Task<Result<Int, QueueSafeValueError>, Never>?)>((0, nil))

        func arm(at point: Int, task: Task<Result<Int, QueueSafeValueError>, Never>) {
            self.state.mutate { $0 = (point, task) }
        }

        func observe(_ point: ChaosPoint) {
            guard case .turnHandOver = point else { return }
            let due: Task<Result<Int, QueueSafeValueError>, Never>? = self.state.mutate { state in
                state.remaining -= 1
                return state.remaining == 0 ? state.task : nil
            }
            due?.cancel()
        }
    }

    @Test(
        "cancelled before it is applied: fails with cancelled and never applies; after: returns its result",
        .debugBuildsOnly("schedule chaos's point observer"),
        arguments: 1...4
    )
    func cancellationRacesCombining(point: Int) async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [point] in
            let window = CancelAtPoint()
            ScheduleChaos.pointObserver = { window.observe($0) }
            ScheduleChaos.seed = 26
            var outcomes: [String] = []
            for _ in 0..<10 {
                let value = QueueSafeValue(value: 0)
                let hold = ValueHold(value, on: DispatchQueue(label: "test.combining.cancel"))
                guard hold.isHolding() else { break }
                let task = Task.detached { await value.suspend.lowestPriority.set(newValue: 1) }
                guard await suspendUntil({ value.waitingCommandCount == 1 }) else { break }
                let seen = await offPool { () -> Int in
                    let after = DispatchSemaphore(value: 0)
                    let saw = AtomicBox(-1)
                    onNewThread {
                        value.wait.lowestPriority.set { current in saw.mutate { $0 = current } }
                        after.signal()
                    }
                    guard eventually({ value.waitingCommandCount == 2 }) else { return -2 }
                    window.arm(at: point, task: task)
                    hold.release()
                    return after.wait(timeout: deadline()) == .success ? saw.value : -3
                }
                switch (await task.value, seen) {
                case (.failure(.cancelled), 0): outcomes.append("cancelled")
                case (.success(1), 1): outcomes.append("applied")
                case (let result, let seen): outcomes.append("BROKEN(\(result), next saw \(seen))")
                }
            }
            print("outcomes: \(Set(outcomes).sorted())")
            fflush(nil)
            exit(0)  // The parent checks the output: a failed exit test hands back no output to show.
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        // The releaser's points: its release, its hand-over (which takes the command out), then, applying it, the
        // release and hand-over that pass the turn on.
        let expected = point <= 2 ? "outcomes: [\"cancelled\"]" : "outcomes: [\"applied\"]"
        #expect(output.contains(expected), "cancelled at hand-over point \(point): \(output)")
    }
}
