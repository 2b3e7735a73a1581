import Dispatch
import SafeValueCore
import Synchronization
import TestSupport
import Testing

/// Counts the live objects made for one test, so that tests running at the same time do not see each other's.
final class Census: Sendable {
    private let count = Atomic<Int>(0)

    /// How many objects made for this census are alive.
    var alive: Int { self.count.load(ordering: .acquiring) }

    fileprivate func born() { self.count.add(1, ordering: .relaxed) }
    fileprivate func died() { self.count.subtract(1, ordering: .releasing) }
}

/// A value, or a capture, whose life a ``Census`` counts.
final class Tracked: Sendable {
    private let census: Census

    init(_ census: Census) {
        self.census = census
        census.born()
    }

    deinit { self.census.died() }
}

/// The schedules, priorities and commands of a kept command object, for the ARC specs.
struct KeptCommandCase: Sendable, CustomTestStringConvertible {
    enum Schedule: Sendable, CaseIterable { case wait, async, suspend }

    let schedule: Schedule
    let isHighest: Bool
    let command: String

    static let commands: [Schedule: [String]] = [
        .wait: [
            "get()", "get(completion:)", "get(manualCompletion:)", "set(newValue:)", "set(completion:)",
            "set(manualCompletion:)", "map(completion:)",
        ],
        .async: [
            "get(completion:)", "get(manualCompletion:)", "set(newValue:completion:)",
            "set(accessClosure:completion:)", "set(manualCompletion:completion:)",
        ],
        .suspend: ["get()", "set(newValue:)", "set(_:)", "map(_:)"],
    ]

    static let all: [KeptCommandCase] = Schedule.allCases.flatMap { schedule in
        [false, true].flatMap { isHighest in
            Self.commands[schedule, default: []].map {
                KeptCommandCase(schedule: schedule, isHighest: isHighest, command: $0)
            }
        }
    }

    var testDescription: String {
        "\(self.schedule).\(self.isHighest ? "highestPriority" : "lowestPriority").\(self.command)"
    }
}

/// A command object kept apart from its holder.
enum KeptCommand: Sendable {
    case wait(QueueSafeWaitCommand<Tracked>)
    case async(QueueSafeAsyncCommand<Tracked>)
    case suspend(QueueSafeSuspendCommand<Tracked>)

    init(_ spec: KeptCommandCase, of holder: QueueSafeValue<Tracked>, queue: DispatchQueue) {
        switch spec.schedule {
        case .wait: self = .wait(spec.isHighest ? holder.wait.highestPriority : holder.wait.lowestPriority)
        case .async:
            let schedule = holder.async(performIn: queue)
            self = .async(spec.isHighest ? schedule.highestPriority : schedule.lowestPriority)
        case .suspend: self = .suspend(spec.isHighest ? holder.suspend.highestPriority : holder.suspend.lowestPriority)
        }
    }

    /// Issues `spec`'s command and waits until it has ended.
    ///
    /// - Returns: The command's error, `nil` if it succeeded; and whether its access or manual closure ran.
    func issue(_ spec: KeptCommandCase, census: Census) async -> (error: QueueSafeValueError?, ran: Bool) {
        let ran = Atomic<Bool>(false)
        let error = await self.run(spec.command, census: census) { ran.store(true, ordering: .relaxed) }
        return (error, ran.load(ordering: .relaxed))
    }

    // swift-format-ignore: CyclomaticComplexity
    private func run(
        _ command: String,
        census: Census,
        closureRan: @escaping @Sendable () -> Void
    ) async -> QueueSafeValueError? {
        switch self {
        case .wait(let wait):
            // The wait schedule blocks its caller: it runs off the cooperative pool.
            return await offPool {
                let errors = AtomicBox<QueueSafeValueError?>(nil)
                func record<T>(_ result: Result<T, QueueSafeValueError>) {
                    if case .failure(let error) = result { errors.mutate { $0 = error } }
                }
                switch command {
                case "get()": record(wait.get())
                case "get(completion:)": wait.get { result in record(result) }
                case "get(manualCompletion:)":
                    wait.get { result, done in
                        if case .success = result { closureRan() }
                        record(result)
                        done()
                    }
                case "set(newValue:)": record(wait.set(newValue: Tracked(census)))
                case "set(completion:)": record(wait.set { _ in closureRan() })
                case "set(manualCompletion:)":
                    record(
                        wait.set { _, done in
                            closureRan()
                            done()
                        }
                    )
                default: record(wait.map { _ in closureRan() })
                }
                return errors.value
            }
        case .async(let asyncCommand):
            return await withCheckedContinuation { (continuation: CheckedContinuation<QueueSafeValueError?, Never>) in
                let finish: @Sendable (Result<Tracked, QueueSafeValueError>) -> Void = { result in
                    if case .failure(let error) = result { return continuation.resume(returning: error) }
                    continuation.resume(returning: nil)
                }
                switch command {
                case "get(completion:)": asyncCommand.get(completion: finish)
                case "get(manualCompletion:)":
                    asyncCommand.get { result, done in
                        if case .success = result { closureRan() }
                        done()
                        finish(result)
                    }
                case "set(newValue:completion:)": asyncCommand.set(newValue: Tracked(census), completion: finish)
                case "set(accessClosure:completion:)":
                    asyncCommand.set(accessClosure: { _ in closureRan() }, completion: finish)
                default:
                    asyncCommand.set(
                        manualCompletion: { _, done in
                            closureRan()
                            done()
                        },
                        completion: finish
                    )
                }
            }
        case .suspend(let suspend):
            let result: Result<Void, QueueSafeValueError>
            switch command {
            case "get()": result = await suspend.get().map { _ in () }
            case "set(newValue:)": result = await suspend.set(newValue: Tracked(census)).map { _ in () }
            case "set(_:)": result = await suspend.set { _ in closureRan() }.map { _ in () }
            default: result = await suspend.map { _ in closureRan() }
            }
            if case .failure(let error) = result { return error }
            return nil
        }
    }
}

/// The value lives as long as its holder, and as long as a command issued before the holder's release runs or
/// waits; never longer, whatever command or schedule objects are kept.
@Suite("QueueSafeValue: the value dies with its holder", .timeLimit(.minutes(1)))
struct QueueSafeValueReleaseTests {
    @Test(
        "a kept command object keeps neither the holder nor the value, and fails afterwards",
        arguments: KeptCommandCase.all
    )
    func keptCommandDoesNotKeepTheValue(spec: KeptCommandCase) async {
        let census = Census()
        let queue = TaggedQueue("test.release.kept")
        var holder: QueueSafeValue<Tracked>? = QueueSafeValue(value: Tracked(census))
        let kept = KeptCommand(spec, of: holder!, queue: queue.queue)
        let before = await kept.issue(spec, census: census)
        #expect(before.error == nil, "the command works while the holder lives")
        #expect(await offPool { queue.drain() })
        #expect(census.alive == 1)

        holder = nil
        #expect(census.alive == 0, "the value outlived its holder")
        let after = await kept.issue(spec, census: census)
        #expect(after.error == .valueContainerDeinited)
        #expect(!after.ran, "a closure ran on a husk")
        #expect(await offPool { queue.drain() })
        #expect(census.alive == 0)
    }

    @Test("kept schedule objects keep neither the holder nor the value")
    func keptSchedulesDoNotKeepTheValue() async {
        let census = Census()
        var holder: QueueSafeValue<Tracked>? = QueueSafeValue(value: Tracked(census))
        let wait = holder!.wait
        let async = holder!.async(performIn: .global())
        let suspend = holder!.suspend
        holder = nil
        #expect(census.alive == 0)
        // Wait commands are unavailable from async code: issued from a synchronous closure. It fails at once.
        let waitCommand = { wait.highestPriority.map { _ in 1 } }
        #expect(waitCommand() == .failure(.valueContainerDeinited))
        let failed = await suspend.lowestPriority.map { _ in 1 }
        #expect(failed == .failure(.valueContainerDeinited))
        await confirmation { confirmed in
            await withCheckedContinuation { continuation in
                async.lowestPriority.get { result in
                    if case .failure(.valueContainerDeinited) = result { confirmed() }
                    continuation.resume()
                }
            }
        }
    }

    @Test("the shorthand holders' command objects keep nothing either")
    func shorthandHolders() async throws {
        try await offPoolTest { checks in
            let census = Census()
            var synced: QueueSafeSyncedValue<Tracked>? = QueueSafeSyncedValue(value: Tracked(census))
            let syncedCommand = synced!.lowestPriority
            synced = nil
            checks.expect(census.alive == 0)
            checks.expect(syncedCommand.map { _ in 1 } == .failure(.valueContainerDeinited))

            let queue = TaggedQueue("test.release.asynced")
            var asynced: QueueSafeAsyncedValue<Tracked>? = QueueSafeAsyncedValue(
                value: Tracked(census),
                queue: queue.queue
            )
            let asyncedCommand = asynced!.highestPriority
            asynced = nil
            checks.expect(census.alive == 0)
            let failed = AtomicBox(false)
            asyncedCommand.get { result in
                if case .failure(.valueContainerDeinited) = result { failed.mutate { $0 = true } }
            }
            checks.expect(queue.drain())
            checks.expect(failed.value)
        }
    }

    @Test("released while a command runs: the value dies as that command ends, on its thread")
    func releasedWhileACommandRuns() async throws {
        try await offPoolTest { checks in
            let census = Census()
            var holder: QueueSafeValue<Tracked>? = QueueSafeValue(value: Tracked(census))
            let command = holder!.wait.lowestPriority
            let inside = DispatchSemaphore(value: 0)
            let letGo = DispatchSemaphore(value: 0)
            let aliveAfter = AtomicBox<Int?>(nil)
            let ended = DispatchSemaphore(value: 0)
            onNewThread {
                _ = command.map { _ in
                    inside.signal()
                    hold(until: letGo)
                }
                let alive = census.alive
                aliveAfter.mutate { $0 = alive }
                ended.signal()
            }
            checks.expect(inside.wait(timeout: deadline()) == .success)
            holder = nil
            checks.expect(census.alive == 1, "the running command lost its value")
            letGo.signal()
            checks.expect(ended.wait(timeout: deadline()) == .success)
            checks.expect(aliveAfter.value == 0, "the value outlived the last command")
            checks.expect(command.get().map { _ in 0 } == .failure(.valueContainerDeinited))
        }
    }

    @Test("released while commands wait: they all run, and the value dies after the last")
    func releasedWhileCommandsWait() async {
        let census = Census()
        var holder: QueueSafeValue<Tracked>? = QueueSafeValue(value: Tracked(census))
        let queue = TaggedQueue("test.release.pending")
        let hold = ValueHold(holder!, on: queue.queue)
        #expect(await offPool { hold.isHolding() })
        // No command object is kept: the last pending job is the last thing that refers to the value.
        let seenAlive = AtomicBox<[Int]>([])
        for _ in 0..<3 {
            holder!.async(performIn: queue.queue).lowestPriority.set(accessClosure: { _ in
                seenAlive.mutate { $0.append(census.alive) }
            })
        }
        let suspended = Task { [command = holder!.suspend.highestPriority] in
            await command.map { _ in census.alive }
        }
        #expect(await suspendUntil { holder!.waitingCommandCount == 4 })
        holder = nil
        #expect(census.alive == 1, "a pending command lost its value")
        hold.release()
        let suspendedReturned = await completes { #expect(await suspended.value == .success(1)) }
        #expect(suspendedReturned)
        #expect(await offPool { queue.drain() })
        #expect(seenAlive.value == [1, 1, 1])
        #expect(census.alive == 0, "the value outlived the last pending command")
    }

    @Test("a cancelled suspend command leaves nothing behind: the repro of the leak")
    func cancelledSuspendLeavesNothing() async {
        let census = Census()
        let captures = Census()
        var holder: QueueSafeValue<Tracked>? = QueueSafeValue(value: Tracked(census))
        let queue = TaggedQueue("test.release.cancelled")
        // A holds the value; B, a manual-completion job, is queued behind it; C, a suspend get, behind B.
        let holdA = ValueHold(holder!, on: queue.queue)
        #expect(await offPool { holdA.isHolding() })
        let doneB = AtomicBox<CommandCompletionClosure?>(nil)
        let startedB = DispatchSemaphore(value: 0)
        let capture = Tracked(captures)
        holder!.async(performIn: queue.queue).lowestPriority.set(manualCompletion: { [capture] _, done in
            withExtendedLifetime(capture) {}
            doneB.mutate { $0 = done }
            startedB.signal()
        })
        let commandC = holder!.suspend.lowestPriority
        let taskC = Task { await commandC.map { _ in 0 } }
        #expect(await suspendUntil { holder!.waitingCommandCount == 2 })
        holdA.release()
        #expect(await waitOffPool(startedB))
        taskC.cancel()
        let taskCReturned = await completes { #expect(await taskC.value == .failure(.cancelled)) }
        #expect(taskCReturned)
        doneB.value?()
        #expect(await offPool { queue.drain() })
        #expect(captures.alive == 1, "the test's own reference")
        _ = consume capture
        #expect(captures.alive == 0, "the queue kept the closure of a command that ran")
        holder = nil
        #expect(census.alive == 0, "the value leaked")
    }

    @Test("a busy queue keeps no closure of a command that ran")
    func busyQueueKeepsNoRunClosures() async throws {
        try await offPoolTest { checks in
            let captures = Census()
            let value = QueueSafeValue(value: 0)
            let queue = TaggedQueue("test.release.busy")
            let first = ValueHold(value, on: queue.queue)
            checks.expect(first.isHolding())
            let ran = DispatchGroup()
            for _ in 0..<5 {
                let capture = Tracked(captures)
                ran.enter()
                value.async(performIn: queue.queue).lowestPriority.set(accessClosure: { [capture] _ in
                    withExtendedLifetime(capture) {}
                    ran.leave()
                })
            }
            // A second hold, then one more command: the queue never empties while the five run.
            let doneSecond = AtomicBox<CommandCompletionClosure?>(nil)
            let holdingSecond = DispatchSemaphore(value: 0)
            value.async(performIn: queue.queue).lowestPriority.set(manualCompletion: { _, done in
                doneSecond.mutate { $0 = done }
                holdingSecond.signal()
            })
            value.async(performIn: queue.queue).lowestPriority.set(newValue: 1)
            checks.expect(value.waitingCommandCount == 7)
            first.release()
            checks.expect(ran.wait(timeout: deadline()) == .success)
            checks.expect(holdingSecond.wait(timeout: deadline()) == .success)
            checks.expect(queue.drain())
            checks.expect(value.waitingCommandCount == 1)
            checks.expect(captures.alive == 0, "closures of commands that ran are still referenced")
            doneSecond.value?()
            checks.expect(queue.drain())
            checks.expect(value.wait.lowestPriority.get() == .success(1))
        }
    }
}
