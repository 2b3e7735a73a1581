import CallbackRouting
import Dispatch
import DispatchKit
import Foundation
import OperationQueuing
import SafeValueCore
import Synchronization
import TestSupport
import Testing

/// "No object outlives its last user" and "releasing any object of this package is safe in every state": objects
/// are dropped mid-flight and checked with deinit counts (``LifetimeProbe``) and weak references, with bounded waits.
@Suite("Contract properties: lifetimes", .serialized, .timeLimit(propertyTimeLimit))
struct LifetimePropertyTests {
    /// Waits for `group`, for at most `seconds`, without blocking the cooperative pool.
    static func wait(_ group: DispatchGroup, seconds: Int = patienceSeconds) async -> Bool {
        await waitOffPool(group, seconds: seconds)
    }

    /// One round of commands in flight on a value whose holder is dropped in the middle.
    ///
    /// A manual-completion command holds the value; `async` and `suspend` commands queue behind it (some `suspend`
    /// ones are cancelled while they wait: issue 18.2's shape); every closure captures a tracked object. Then the
    /// holder is dropped (keeping schedule and command objects if `keepCommands`), the hold released, and every
    /// command waited for.
    static func dropHolderMidFlight(
        round: Int,
        random: inout SeededRandom,
        keepCommands: Bool
    ) async -> (probe: LifetimeProbe, kept: [Any], ran: Bool, lateResult: Result<Int, QueueSafeValueError>?) {
        let probe = LifetimeProbe()
        let queue = DispatchQueue(label: "props.lifetime.value.\(round)")
        var holder: QueueSafeValue<[LifetimeProbe.Tracked]>? = QueueSafeValue(value: [probe.make()])
        let done = AtomicBox<CommandCompletionClosure?>(nil)
        let ran = DispatchGroup()
        var kept: [Any] = []
        var tasks: [Task<Void, Never>] = []
        do {
            // The only strong reference to the holder outside this block is `holder`; the tasks get command objects.
            let value = holder!
            let held = DispatchSemaphore(value: 0)
            value.async(performIn: queue).highestPriority.set(manualCompletion: { [token = probe.make()] list, finish in
                list.append(token)
                done.mutate { $0 = finish }
                held.signal()
            })
            _ = await waitOffPool(held)
            if keepCommands {
                kept = [
                    value.wait.lowestPriority, value.async(performIn: queue).highestPriority,
                    value.suspend.lowestPriority,
                ]
            }
            // One priority for the whole round in most rounds, so that jobs and suspend commands share one buffer.
            let roundPriority = Int.random(in: 0..<3, using: &random)
            for number in 0..<Int.random(in: 2...8, using: &random) {
                let token = probe.make()
                ran.enter()
                let highest = roundPriority == 2 ? random.chance(50) : roundPriority == 1
                if number.isMultiple(of: 2) || random.chance(30) {
                    // Holds the value a moment after its closure returns, so cancels land while it holds.
                    let schedule = value.async(performIn: queue)
                    let command = highest ? schedule.highestPriority : schedule.lowestPriority
                    let microseconds = Int.random(in: 0..<400, using: &random)
                    command.set(
                        manualCompletion: { list, finish in
                            list.append(token)
                            DispatchQueue.global().asyncAfter(
                                deadline: .now() + .microseconds(microseconds),
                                execute: finish
                            )
                        },
                        completion: { _ in ran.leave() }
                    )
                } else {
                    let command = highest ? value.suspend.highestPriority : value.suspend.lowestPriority
                    let queued = value.waitingCommandCount
                    tasks.append(
                        Task {
                            _ = await command.set { list in list.append(token) }
                            ran.leave()
                        }
                    )
                    _ = await suspendUntil { value.waitingCommandCount > queued }
                }
            }
        }
        holder = nil
        // Cancel some waiting suspend commands, release the hold, then cancel others as the queue drains.
        let cancelBefore = tasks.filter { _ in random.chance(30) }
        for task in cancelBefore { task.cancel() }
        done.value?()
        for task in tasks where random.chance(50) {
            try? await Task.sleep(for: .microseconds(Int.random(in: 0..<300, using: &random)))
            task.cancel()
        }
        let allRan = await Self.wait(ran)
        // A command issued through a kept object once the holder is gone fails, and runs nothing.
        // Off the pool: a wait command is a blocking call, which the checker reports from inside a task.
        var late: Result<Int, QueueSafeValueError>?
        if let command = kept.first as? QueueSafeWaitCommand<[LifetimeProbe.Tracked]> {
            late = await offPool { command.map { $0.count } }
        }
        done.mutate { $0 = nil }
        return (probe, kept, allRan, late)
    }

    @Test("a value dropped with commands in flight (some suspend ones cancelled) is destroyed once they are done")
    func valueWithoutKeptCommands() async {
        var random = PropertyRun.random(50)
        for round in 0..<PropertyRun.rounds(40) {
            let outcome = await Self.dropHolderMidFlight(round: round, random: &random, keepCommands: false)
            #expect(outcome.ran, "\(PropertyRun.failure("commands issued before the release still run", round: round))")
            let probe = outcome.probe
            let released = await offPool { probe.allReleased() }
            #expect(
                released,
                "\(PropertyRun.failure("the value and its commands' closures outlive no user", round: round)): \(outcome.probe.alive) objects alive"
            )
            if !released { return }
        }
    }

    @Test("a kept schedule or command object does not keep the value alive once the holder is gone")
    func valueWithKeptCommands() async {
        var random = PropertyRun.random(51)
        for round in 0..<PropertyRun.rounds(10) {
            let outcome = await Self.dropHolderMidFlight(round: round, random: &random, keepCommands: true)
            #expect(outcome.ran, "\(PropertyRun.failure("commands issued before the release still run", round: round))")
            let probe = outcome.probe
            let released = await offPool { probe.allReleased() }
            #expect(
                released,
                "\(PropertyRun.failure("a kept command object keeps at most a husk, not the value", round: round)): \(outcome.probe.alive) objects alive"
            )
            #expect(
                outcome.lateResult == .failure(.valueContainerDeinited),
                "\(PropertyRun.failure("a command issued after the holder is gone fails", round: round))"
            )
            withExtendedLifetime(outcome.kept) {}
            if !released { return }
        }
    }

    @Test("a subject released without a completion ends its live `values` iterations, and is destroyed")
    func subjectWithLiveIterations() async {
        var random = PropertyRun.random(52)
        for round in 0..<PropertyRun.rounds(5) {
            var subject: CallbackSubject<Int, Never>? = CallbackSubject<Int, Never>()
            let weak = WeakReference(subject!)
            let ended = DispatchGroup()
            let iterating = DispatchGroup()
            let iterations = Int.random(in: 1...3, using: &random)
            for _ in 0..<iterations {
                ended.enter()
                iterating.enter()
                // Only the iterator is kept (as `for await` does): the sequence would keep the subject alive.
                let values = AtomicBox<CallbackSubjectValues<Int, Never>?>(subject!.values)
                Task {
                    var iterator = values.mutate { sequence in
                        defer { sequence = nil }
                        return sequence!
                    }.makeAsyncIterator()
                    iterating.leave()
                    while await iterator.next() != nil {}
                    ended.leave()
                }
            }
            _ = await Self.wait(iterating)
            for value in 0..<Int.random(in: 0...5, using: &random) { subject?.send(value) }
            subject = nil
            let allEnded = await Self.wait(ended)
            #expect(
                allEnded,
                "\(PropertyRun.failure("a `for await` over values ends when its subject is released", round: round))"
            )
            #expect(
                await offPool { weak.released() },
                "\(PropertyRun.failure("a released subject is destroyed", round: round))"
            )
            if !allEnded { return }
        }
    }

    @Test("a Queuer released while its operations run is destroyed once they end, and every operation finishes")
    func queuerWithRunningOperations() async {
        let failures = PropertyFailures()
        await offPool {
            var random = PropertyRun.random(53)
            for round in 0..<PropertyRun.rounds(10) {
                let probe = LifetimeProbe()
                let gate = DispatchSemaphore(value: 0)
                var queuer: Queuer? = Queuer(name: "props.lifetime.queuer.\(round)", maxConcurrentOperationCount: 2)
                let weak = WeakReference(queuer!)
                var operations: [WeakReference<ConcurrentOperation>] = []
                let count = Int.random(in: 1...5, using: &random)
                let started = DispatchGroup()
                for index in 0..<count {
                    let token = probe.make()
                    started.enter()
                    let operation = ConcurrentOperation(name: "lifetime \(index)") { _ in
                        started.leave()
                        hold(until: gate)
                        withExtendedLifetime(token) {}
                    }
                    operations.append(WeakReference(operation))
                    queuer?.addOperation(operation)
                }
                // Two run (the limit), the rest wait; release the queuer with both kinds in it.
                _ = eventually { (queuer?.operations.filter(\.isExecuting).count ?? 0) >= min(2, count) }
                queuer = nil
                for _ in 0..<count { gate.signal() }
                let allStarted = started.wait(timeout: deadline()) == .success
                failures.expect(
                    allStarted,
                    "\(PropertyRun.failure("queued operations still run after the Queuer is released", round: round))"
                )
                failures.expect(
                    weak.released() && operations.allSatisfy { $0.released() },
                    "\(PropertyRun.failure("a released Queuer and its finished operations are destroyed", round: round))"
                )
                failures.expect(
                    probe.allReleased(),
                    "\(PropertyRun.failure("operation blocks are released with their operations", round: round))"
                )
            }
        }
        report(failures)
    }

    @Test("timers and schedulers released in any state stop firing and release their handlers")
    func timersInAnyState() async {
        let failures = PropertyFailures()
        await offPool {
            var random = PropertyRun.random(54)
            for round in 0..<PropertyRun.rounds(8) {
                let probe = LifetimeProbe()
                let fired = Atomic<Int>(0)
                let queue = GCDQueue(name: "props.lifetime.timer.\(round)")
                let state = Int.random(in: 0..<5, using: &random)
                var timer: GCDTimer? = GCDTimer(queue: queue, interval: 0.001)
                let weak = WeakReference(timer!)
                timer?.repeatInterval = state == 4 ? nil : 0.001
                timer?.handler { [token = probe.make()] in
                    withExtendedLifetime(token) {}
                    fired.add(1, ordering: .relaxed)
                }
                switch state {
                case 0: break  // never started
                case 1: timer?.start()  // running
                case 2:
                    timer?.start()
                    timer?.pause()
                case 3:
                    timer?.start()
                    timer?.stop()
                default: timer?.start()  // a one-shot
                }
                if state == 1 || state == 4 { _ = eventually { fired.load(ordering: .relaxed) > 0 } }
                var scheduler: Scheduler? = Scheduler(deadline: .now() + .milliseconds(1), repeating: .milliseconds(1))
                if random.chance(70) {
                    scheduler?.setHandler { [token = probe.make()] in withExtendedLifetime(token) {} }
                }
                if random.chance(30) { scheduler?.cancel() }
                let weakScheduler = WeakReference(scheduler!)
                timer = nil
                scheduler = nil
                withExtendedLifetime((timer, scheduler)) {}
                failures.expect(
                    weak.released() && weakScheduler.released(),
                    "\(PropertyRun.failure("a released timer or scheduler is destroyed (state \(state))", round: round))"
                )
                failures.expect(
                    probe.allReleased(),
                    "\(PropertyRun.failure("a released timer releases its handler (state \(state))", round: round))"
                )
                let count = fired.load(ordering: .relaxed)
                _ = queue.sync { 0 }
                Thread.sleep(forTimeInterval: 0.005)
                failures.expect(
                    fired.load(ordering: .relaxed) <= count + 1,
                    "\(PropertyRun.failure("a released timer stops firing (state \(state))", round: round))"
                )
            }
        }
        report(failures)
    }

    @Test("a semaphore released with waiters in line is destroyed once they have left it")
    func semaphoreWithWaiters() async {
        var random = PropertyRun.random(55)
        for round in 0..<PropertyRun.rounds(10) {
            var semaphore: CountingSemaphore? = CountingSemaphore(resources: 0)
            let weak = WeakReference(semaphore!)
            let waiters = Int.random(in: 1...4, using: &random)
            let left = DispatchGroup()
            var tasks: [Task<Void, Never>] = []
            for index in 0..<waiters {
                left.enter()
                let waiting = semaphore!
                switch index % 3 {
                case 0:
                    tasks.append(
                        Task {
                            _ = await waiting.wait(timeout: .seconds(3_600))
                            left.leave()
                        }
                    )
                case 1:
                    tasks.append(
                        Task {
                            _ = try? await waiting.wait()
                            left.leave()
                        }
                    )
                default:
                    onNewThread {
                        _ = waiting.wait(deadline())
                        left.leave()
                    }
                }
            }
            _ = await suspendUntil { weak.isReleased || (semaphore?.waiterCount ?? 0) == waiters }
            // Grant some, cancel the tasks, and let the rest go by signals; then drop the semaphore.
            for _ in 0..<waiters { semaphore?.signal() }
            for task in tasks { task.cancel() }
            semaphore = nil
            withExtendedLifetime(semaphore) {}
            let allLeft = await Self.wait(left)
            #expect(allLeft, "\(PropertyRun.failure("every waiter returns", round: round))")
            #expect(
                await offPool { weak.released() },
                "\(PropertyRun.failure("a semaphore is destroyed once its waiters have left", round: round))"
            )
        }
    }
}
