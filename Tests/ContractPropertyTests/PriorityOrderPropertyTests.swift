import AtomicPrimitives
import Dispatch
import Foundation
import SafeValueCore
import Synchronization
import TestSupport
import Testing

/// QueueSafeValue: "Every pending highest-priority command runs before any pending lowest-priority one. Within one
/// priority, commands run in the order they were issued."
///
/// The hard part is knowing that a command really is pending. A manual-completion command holds the value while
/// commands are issued, and an issuer records `issued` only once the command is certainly pending:
/// - `async(performIn:)` returns after enqueueing, so `issued` is recorded when the call returns;
/// - a `suspend` or `wait` command does not return until it has run, so it is issued one at a time and `issued` is
///   recorded when the value's own count of queued commands (`waitingCommandCount`) has grown by one;
/// - a `wait` command's own moment of beginning to wait is certified by the value's debug hook
///   (`observeWaitingCommands`): from then on it is pending, whatever it does while it waits. That test releases the
///   value at the worst moment: while the earlier command waits and a later one has just begun to.
/// ``CommandOrderChecker`` then checks the history.
@Suite("Contract properties: priority, then FIFO", .timeLimit(propertyTimeLimit))
struct PriorityOrderPropertyTests {
    /// Holds the value with an `async` manual-completion command (id 0) until ``release()``.
    final class Hold: Sendable {
        private let done = AtomicBox<CommandCompletionClosure?>(nil)
        private let started = DispatchSemaphore(value: 0)
        private let history: PropertyHistory

        init(_ value: QueueSafeValue<Int>, history: PropertyHistory, queue: DispatchQueue) {
            self.history = history
            history.record("issuing", 0, 1)
            value.async(performIn: queue).highestPriority.set(manualCompletion: { [done, started] _, finish in
                history.record("start", 0, 1)
                done.mutate { $0 = finish }
                started.signal()
            })
            history.record("issued", 0, 1)
        }

        func isHolding() -> Bool { self.started.wait(timeout: deadline()) == .success }

        func release() {
            self.history.record("end", 0, 1)
            self.done.value?()
        }
    }

    /// Checks one round's history; records an issue naming the seed and showing the history around the violation.
    static func check(_ history: PropertyHistory, round: Int, finished: Bool, _ failures: PropertyFailures) -> Bool {
        let events = history.events
        guard finished else {
            failures.record(
                (PropertyRun.failure("every issued command runs (timed out)", round: round) + "\n"
                    + PropertyHistory.excerpt(of: events, around: [events.count - 1], radius: 8))
            )
            return false
        }
        if let violation = CommandOrderChecker(events: events).firstViolation() {
            failures.record(
                (PropertyRun.failure(violation.rule, round: round) + "\n"
                    + PropertyHistory.excerpt(of: events, around: violation.around))
            )
            return false
        }
        return true
    }

    /// How many commands a round queues on the held value.
    ///
    /// Users usually queue a few; `deep` queues hundreds, so that the pending queue's storage grows past the point
    /// where it drops its emptied front (64 slots) while commands still come and go: the storage grows, compacts and
    /// is reused under the same rules.
    enum Depth: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case shallow, deep

        var testDescription: String { rawValue }
    }

    /// Burns a few hundred nanoseconds to a few microseconds, so command closures have some length.
    static func work(_ spins: Int) {
        var sink = 0
        for index in 0..<spins { sink &+= index }
        withExtendedLifetime(sink) {}
    }

    @Test("async(performIn:): pending commands run by priority, then in issue order", arguments: Depth.allCases)
    func asyncSchedule(depth: Depth) async {
        let failures = PropertyFailures()
        await offPool {
            var random = PropertyRun.random(1)
            let rounds = PropertyRun.rounds(depth == .deep ? 4 : 40)
            let issuers = 3
            let perIssuer = depth == .deep ? 150 : 8
            let shared = DispatchQueue(label: "props.async.shared", attributes: .concurrent)
            let serial = (0..<issuers).map { DispatchQueue(label: "props.async.serial.\($0)") }
            let holdQueue = DispatchQueue(label: "props.async.hold")
            // The most commands pending at a release.
            let deepest = Atomic<Int>(0)
            for round in 0..<rounds {
                let value = QueueSafeValue(value: 0)
                let history = PropertyHistory()
                let hold = Hold(value, history: history, queue: holdQueue)
                failures.expect(hold.isHolding())
                let total = issuers * perIssuer
                let ran = DispatchGroup()
                for _ in 0..<total { ran.enter() }
                // The releasing thread lets go after a random number of commands were issued, so some are pending at
                // release and others race it.
                let releaseAfter = Int.random(in: 0...total, using: &random)
                let issuedCount = Atomic<Int>(0)
                let seeds = (0...issuers).map { random.derived($0) }
                let finished = runOnThreads(issuers + 1, progress: { history.count }) { index in
                    var random = seeds[index]
                    if index == issuers {
                        let limit = deadline()
                        while issuedCount.load(ordering: .acquiring) < releaseAfter && DispatchTime.now() < limit {}
                        deepest.store(
                            max(deepest.load(ordering: .relaxed), value.waitingCommandCount),
                            ordering: .relaxed
                        )
                        hold.release()
                        return
                    }
                    for number in 0..<perIssuer {
                        let id = 1 + index * perIssuer + number
                        let isHighest = random.chance(50)
                        let priority = isHighest ? 1 : 0
                        let queue = random.chance(50) ? serial[index] : shared
                        let schedule = value.async(performIn: queue)
                        let command = isHighest ? schedule.highestPriority : schedule.lowestPriority
                        let amount = Int.random(in: 0..<200, using: &random)
                        let manual = random.chance(40)
                        let lateDone = random.chance(50)
                        history.record("issuing", id, priority)
                        if manual {
                            command.set(manualCompletion: { _, done in
                                history.record("start", id, priority)
                                Self.work(amount)
                                history.record("end", id, priority)
                                if lateDone {
                                    DispatchQueue.global().async {
                                        done()
                                        ran.leave()
                                    }
                                } else {
                                    done()
                                    ran.leave()
                                }
                            })
                        } else {
                            command.set(accessClosure: { count in
                                history.record("start", id, priority)
                                count += 1
                                Self.work(amount)
                                history.record("end", id, priority)
                                ran.leave()
                            })
                        }
                        history.record("issued", id, priority)
                        issuedCount.add(1, ordering: .releasing)
                    }
                }
                let allRan = finished && waitForProgress(ran) { history.count }
                if !Self.check(history, round: round, finished: allRan, failures) { return }
            }
            let pending = deepest.load(ordering: .relaxed)
            failures.expect(depth == .shallow || pending >= 128, "a deep run had at most \(pending) commands pending")
        }
        report(failures)
    }

    /// Issues `count` commands one at a time with `issue`, recording `issued` for each once the value's queue has
    /// grown by one: then it is certainly pending.
    static func issuePaced(
        _ value: QueueSafeValue<Int>,
        history: PropertyHistory,
        count: Int,
        random: inout SeededRandom,
        issue: (_ id: Int, _ highest: Bool) -> Void
    ) -> Bool {
        for id in 1...count {
            let queued = value.waitingCommandCount
            let highest = random.chance(50)
            history.record("issuing", id, highest ? 1 : 0)
            issue(id, highest)
            guard eventually({ value.waitingCommandCount == queued + 1 }) else { return false }
            history.record("issued", id, highest ? 1 : 0)
        }
        return true
    }

    @Test(
        "suspend: queued commands run by priority, then in issue order; later ones never overtake them",
        arguments: Depth.allCases
    )
    func suspendSchedule(depth: Depth) async {
        let failures = PropertyFailures()
        defer { report(failures) }
        var random = PropertyRun.random(2)
        let rounds = PropertyRun.rounds(depth == .deep ? 2 : 25)
        let holdQueue = DispatchQueue(label: "props.suspend.hold")
        for round in 0..<rounds {
            let value = QueueSafeValue(value: 0)
            let history = PropertyHistory()
            let hold = Hold(value, history: history, queue: holdQueue)
            failures.expect(await offPool { hold.isHolding() })
            let paced = Int.random(in: depth == .deep ? 150...250 : 2...8, using: &random)
            let late = Int.random(in: depth == .deep ? 0...60 : 0...4, using: &random)
            let ran = DispatchGroup()
            for _ in 0..<(paced + late) { ran.enter() }
            let issue = { @Sendable (id: Int, highest: Bool) -> Task<Void, Never> in
                let priority = highest ? 1 : 0
                return Task.detached {
                    let schedule = value.suspend
                    let command = highest ? schedule.highestPriority : schedule.lowestPriority
                    let result = await command.set { count in
                        history.record("start", id, priority)
                        count += 1
                        history.record("end", id, priority)
                    }
                    if case .failure(.cancelled) = result { history.record("cancelled", id, priority) }
                    ran.leave()
                }
            }
            // Paced as `issuePaced` does, polling without blocking the pool the commands' tasks need.
            var queuedAll = true
            var pacedTasks: [Task<Void, Never>] = []
            for id in 1...paced where queuedAll {
                let queued = value.waitingCommandCount
                let highest = random.chance(50)
                history.record("issuing", id, highest ? 1 : 0)
                pacedTasks.append(issue(id, highest))
                queuedAll = await suspendUntil { value.waitingCommandCount == queued + 1 }
                history.record("issued", id, highest ? 1 : 0)
            }
            failures.expect(
                queuedAll,
                "\(PropertyRun.failure("a suspend command on a held value queues", round: round))"
            )
            // Commands that race the release: issued, never certainly pending, so they may only be overtaken.
            var lateRandom = random.derived(round)
            // A deep queue also loses commands from its middle: tasks cancelled while they wait leave it.
            var cancelRequested: Set<Int> = []
            if depth == .deep {
                for (index, task) in pacedTasks.enumerated() where lateRandom.chance(20) {
                    task.cancel()
                    cancelRequested.insert(index + 1)  // paced ids count from 1
                }
            }
            hold.release()
            for number in 0..<late {
                let id = 1_000 + number  // after every paced id
                let highest = lateRandom.chance(50)
                history.record("issuing", id, highest ? 1 : 0)
                _ = issue(id, highest)
            }
            let allRan = await offPool { waitForProgress(ran) { history.count } }
            if !Self.check(history, round: round, finished: allRan, failures) { return }
            // "A suspend command whose task is cancelled while it waits returns .failure(.cancelled) ... without
            // waiting for the value": exactly the cancelled ones leave the queue, and none of them runs.
            let cancelledIDs = Set(history.events.filter { $0.kind == "cancelled" }.map(\.payload))
            if cancelledIDs != cancelRequested {
                failures.record(
                    PropertyRun.failure(
                        "exactly the commands whose tasks were cancelled while waiting fail",
                        round: round
                    )
                        + ": cancelled \(cancelRequested.sorted()), failed \(cancelledIDs.sorted())"
                )
                return
            }
        }
    }

    @Test("wait: queued commands run by priority, then in issue order; the releasing thread never overtakes them")
    func waitScheduleQueued() async {
        let failures = PropertyFailures()
        await offPool {
            var random = PropertyRun.random(3)
            let rounds = PropertyRun.rounds(25)
            let holdQueue = DispatchQueue(label: "props.wait.hold")
            for round in 0..<rounds {
                let value = QueueSafeValue(value: 0)
                let history = PropertyHistory()
                let hold = Hold(value, history: history, queue: holdQueue)
                failures.expect(hold.isHolding())
                let paced = Int.random(in: 2...6, using: &random)
                let ran = DispatchGroup()
                for _ in 0..<(paced + 1) { ran.enter() }
                let queuedAll = Self.issuePaced(value, history: history, count: paced, random: &random) { id, highest in
                    let priority = highest ? 1 : 0
                    onNewThread {
                        let schedule = value.wait
                        let command = highest ? schedule.highestPriority : schedule.lowestPriority
                        command.set { count in
                            history.record("start", id, priority)
                            count += 1
                            history.record("end", id, priority)
                        }
                        ran.leave()
                    }
                }
                failures.expect(
                    queuedAll,
                    "\(PropertyRun.failure("a wait command on a held value queues", round: round))"
                )
                // The releasing thread's own next lowest-priority command, at once after the release.
                onNewThread {
                    hold.release()
                    history.record("issuing", 99, 0)
                    value.wait.lowestPriority.set { count in
                        history.record("start", 99, 0)
                        count += 1
                        history.record("end", 99, 0)
                    }
                    ran.leave()
                }
                let allRan = waitForProgress(ran) { history.count }
                if !Self.check(history, round: round, finished: allRan, failures) { return }
            }
        }
        report(failures)
    }

    @Test(
        "wait: a command that began to wait is never overtaken by a later one, whenever the value comes free",
        .debugBuildsOnly("the value's wait observer")
    )
    func waitingCommandIsNeverOvertaken() async {
        let failures = PropertyFailures()
        await offPool {
            var random = PropertyRun.random(4)
            let rounds = PropertyRun.rounds(150)
            let holdQueue = DispatchQueue(label: "props.waiting.hold")
            for round in 0..<rounds {
                let value = QueueSafeValue(value: 0)
                let history = PropertyHistory()
                let hold = Hold(value, history: history, queue: holdQueue)
                failures.expect(hold.isHolding())
                // The later command's thread is already running, and spins until the earlier one waits, so that it
                // is issued within microseconds of that moment.
                let earlierIsWaiting = Atomic<Bool>(false)
                let spins = Int.random(in: 0...400, using: &random)
                // The observer is kept by the value, so it must not keep the hold, which keeps the value.
                value.observeWaitingCommands { [weak hold] isHighest in
                    history.record("issued", isHighest ? 1 : 2, isHighest ? 1 : 0)
                    if isHighest {
                        earlierIsWaiting.store(true, ordering: .releasing)
                    } else {
                        // The later command has just begun to wait: free the value now, from its thread.
                        Self.work(spins)
                        hold?.release()
                    }
                }
                let ran = DispatchGroup()
                ran.enter()
                ran.enter()
                onNewThread {
                    while !earlierIsWaiting.load(ordering: .acquiring) { yieldProcessor() }
                    history.record("issuing", 2, 0)
                    value.wait.lowestPriority.set { count in
                        history.record("start", 2, 0)
                        count += 1
                        history.record("end", 2, 0)
                    }
                    ran.leave()
                }
                onNewThread {
                    history.record("issuing", 1, 1)
                    value.wait.highestPriority.set { count in
                        history.record("start", 1, 1)
                        count += 1
                        history.record("end", 1, 1)
                    }
                    ran.leave()
                }
                let allRan = waitForProgress(ran) { history.count }
                if !allRan { earlierIsWaiting.store(true, ordering: .releasing) }
                if !Self.check(history, round: round, finished: allRan, failures) { return }
            }
        }
        report(failures)
    }
}
