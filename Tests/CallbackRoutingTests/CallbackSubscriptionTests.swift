import CallbackRouting
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

/// A route for a subscriber, with a way to wait until every block sent to it so far has run.
struct FlushableRoute: Sendable {
    let queue: CallbackQueue
    /// Waits until every block the route was given before the call has run; `false` at the deadline.
    let flush: @Sendable () -> Bool

    static func make(_ route: Route) -> FlushableRoute {
        switch route {
        case .untouch:
            return FlushableRoute(queue: .untouch) { true }
        case .mainAsync, .mainCurrentOrAsync:
            return FlushableRoute(queue: route.make()) { onMainQueue {} }
        case .serialQueue, .concurrentQueue:
            let queue = DispatchQueue(
                label: "test.subscription.\(route.rawValue)",
                attributes: route == .concurrentQueue ? .concurrent : []
            )
            return FlushableRoute(queue: .dispatch(queue)) {
                let done = DispatchSemaphore(value: 0)
                queue.async(flags: .barrier) { done.signal() }
                return done.wait(timeout: deadline()) == .success
            }
        case .operationQueue:
            let queue = OperationQueue()
            return FlushableRoute(queue: .operationQueue(queue)) {
                let done = DispatchSemaphore(value: 0)
                onNewThread {
                    queue.waitUntilAllOperationsAreFinished()
                    done.signal()
                }
                return done.wait(timeout: deadline()) == .success
            }
        }
    }
}

/// One entry of a history: a callback started (with the value it got), or `cancel()` or the release returned.
private enum Mark: Equatable {
    case started(Int)
    case stopped
}

/// The history of one subscriber and of whoever stops it, in the order things happened.
///
/// A callback's first line reads an atomic flag that the stop sets as soon as `cancel()` (or the release) has
/// returned: a lock there would let the stopper's record overtake a callback that started before the stop.
private final class History: Sendable {
    let marks = AtomicBox<[Mark]>([])
    let started = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let late = AtomicBox<[Int]>([])

    func callbackStarted(_ value: Int) {
        if self.stopped.load(ordering: .sequentiallyConsistent) { self.late.mutate { $0.append(value) } }
        self.marks.mutate { $0.append(.started(value)) }
        self.started.signal()
    }

    func stopReturned() {
        self.stopped.store(true, ordering: .sequentiallyConsistent)
        self.marks.mutate { $0.append(.stopped) }
    }

    /// The values of the callbacks that started after `cancel()` (or the release) returned.
    var startsAfterStop: [Int] {
        self.late.value
    }

    /// Whether the callbacks got strictly increasing values: in send order, none twice.
    var inSendOrder: Bool {
        let values = self.marks.value.compactMap { mark -> Int? in
            if case .started(let value) = mark { return value }
            return nil
        }
        return zip(values, values.dropFirst()).allSatisfy { $0 < $1 }
    }
}

/// Keeps what a deadlocked round still uses alive, so that the test fails by its timeouts instead of hanging in a
/// release.
private let deadlocked = AtomicBox<[any Sendable]>([])

@Suite("CallbackSubscription: cancel() never waits for a callback", .timeLimit(.minutes(1)))
struct CallbackSubscriptionTests {
    @Test("two subscribers on two queues, each cancelling the other from a callback, do not deadlock when they meet")
    func mutualCancelThatMeets() async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Never>()
            let queueA = DispatchQueue(label: "test.mutual.a")
            let queueB = DispatchQueue(label: "test.mutual.b")
            let holderA = AtomicBox<CallbackSubscription?>(nil)
            let holderB = AtomicBox<CallbackSubscription?>(nil)
            let insideA = DispatchSemaphore(value: 0)
            let insideB = DispatchSemaphore(value: 0)
            let met = AtomicBox(0)
            holderA.mutate { slot in
                slot = subject.subscribe(on: .dispatch(queueA)) { _ in
                    insideA.signal()
                    if insideB.wait(timeout: deadline()) == .success { met.mutate { $0 += 1 } }
                    holderB.value?.cancel()
                }
            }
            holderB.mutate { slot in
                slot = subject.subscribe(on: .dispatch(queueB)) { _ in
                    insideB.signal()
                    if insideA.wait(timeout: deadline()) == .success { met.mutate { $0 += 1 } }
                    holderA.value?.cancel()
                }
            }
            subject.send(1)
            let drained = DispatchGroup()
            for queue in [queueA, queueB] {
                drained.enter()
                queue.async { drained.leave() }
            }
            let finished = drained.wait(timeout: deadline()) == .success
            checks.expect(finished, "the two callbacks deadlocked in each other's cancel()")
            checks.expect(met.value == 2, "both callbacks ran at the same time")
            checks.expect(subject.subscriberCount == 0)
            if !finished { deadlocked.mutate { $0.append((subject, holderA, holderB)) } }
        }
    }

    @Test(
        "two subscribers on one route kind cancelling each other from their callbacks, many rounds, do not deadlock",
        arguments: Route.allCases
    )
    func mutualCancelManyRounds(route: Route) async throws {
        try await offPoolTest { checks in
            // Each subscriber has a route of its own kind (its own queue, where the kind has one).
            let targetA = FlushableRoute.make(route)
            let targetB = FlushableRoute.make(route)
            // Serial queues, the original deadlock's shape, get the most rounds; all together stay short under TSan.
            let rounds =
                switch route {
                case .serialQueue: 10_000
                case .mainAsync, .mainCurrentOrAsync: 500
                default: 2_000
                }
            for round in 0..<rounds {
                let subject = CallbackSubject<Int, Never>()
                let holderA = AtomicBox<CallbackSubscription?>(nil)
                let holderB = AtomicBox<CallbackSubscription?>(nil)
                let calls = AtomicBox(0)
                holderA.mutate { slot in
                    slot = subject.subscribe(on: targetA.queue) { _ in
                        calls.mutate { $0 += 1 }
                        holderB.value?.cancel()
                    }
                }
                holderB.mutate { slot in
                    slot = subject.subscribe(on: targetB.queue) { _ in
                        calls.mutate { $0 += 1 }
                        holderA.value?.cancel()
                    }
                }
                subject.send(round)
                guard targetA.flush() && targetB.flush() else {
                    checks.expect(false, "round \(round): the two callbacks deadlocked in each other's cancel()")
                    deadlocked.mutate { $0.append((subject, holderA, holderB)) }
                    return
                }
                checks.expect((1...2).contains(calls.value), "round \(round): \(calls.value) calls for one send")
            }
        }
    }

    @Test("cancel() returns while the subscriber's callback runs on another thread", arguments: Route.allCases)
    func cancelDoesNotWaitForARunningCallback(route: Route) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Never>()
            let target = FlushableRoute.make(route)
            let inside = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let subscription = subject.subscribe(on: target.queue) { _ in
                inside.signal()
                hold(until: release)
            }
            onNewThread { subject.send(1) }
            checks.expect(inside.wait(timeout: deadline()) == .success)
            let cancelled = DispatchSemaphore(value: 0)
            onNewThread {
                subscription.cancel()
                cancelled.signal()
            }
            checks.expect(cancelled.wait(timeout: deadline()) == .success, "cancel() waited for the running callback")
            release.signal()
            checks.expect(target.flush())
        }
    }

    @Test(
        "no callback starts after cancel() or the release returned on another thread, under a stream of sends",
        arguments: Route.allCases,
        [true, false]
    )
    func noCallbackStartsAfterStop(route: Route, releases: Bool) async throws {
        try await offPoolTest { checks in
            for round in 0..<60 {
                let subject = CallbackSubject<Int, Never>()
                let target = FlushableRoute.make(route)
                let history = History()
                let holder = AtomicBox<CallbackSubscription?>(
                    subject.subscribe(on: target.queue, receiveValue: history.callbackStarted)
                )
                let stop = AtomicBox(false)
                let senderDone = DispatchSemaphore(value: 0)
                onNewThread {
                    var value = 0
                    while !stop.value {
                        value += 1
                        subject.send(value)
                    }
                    senderDone.signal()
                }
                for _ in 0..<3 { checks.expect(history.started.wait(timeout: deadline()) == .success) }
                if releases {
                    holder.mutate { $0 = nil }  // the last reference: its deinit cancels
                } else {
                    holder.value?.cancel()
                }
                history.stopReturned()
                stop.mutate { $0 = true }
                checks.expect(senderDone.wait(timeout: deadline()) == .success)
                checks.expect(target.flush())
                // A call whose drain made its last look before cancel() set the flag has started, even if its thread is
                // preempted before the callback's first line and that line comes a moment after cancel() returned
                // (no implementation can close that gap without waiting for user code); calls never overlap, so there
                // is at most one such call. The window suite below holds a drain at the moment a later call would come from.
                let late = history.startsAfterStop
                checks.expect(
                    late.count <= 1,
                    "round \(round): callbacks \(late) started after the subscription was stopped"
                )
                checks.expect(history.inSendOrder, "round \(round)")
                checks.expect(subject.subscriberCount == 0)
                withExtendedLifetime(holder) {}
            }
        }
    }

    @Test(
        "after cancel() from the subscriber's own callback, no later callback starts, under a stream of sends",
        arguments: Route.allCases
    )
    func noCallbackStartsAfterCancelFromOwnCallback(route: Route) async throws {
        try await offPoolTest { checks in
            for round in 0..<60 {
                let subject = CallbackSubject<Int, Never>()
                let target = FlushableRoute.make(route)
                let history = History()
                let holder = AtomicBox<CallbackSubscription?>(nil)
                let cancelled = DispatchSemaphore(value: 0)
                holder.mutate { slot in
                    slot = subject.subscribe(on: target.queue) { value in
                        history.callbackStarted(value)
                        if value == 3 {
                            holder.value?.cancel()
                            history.stopReturned()
                            cancelled.signal()
                        }
                    }
                }
                let stop = AtomicBox(false)
                let senderDone = DispatchSemaphore(value: 0)
                onNewThread {
                    var value = 0
                    while !stop.value {
                        value += 1
                        subject.send(value)
                    }
                    senderDone.signal()
                }
                checks.expect(cancelled.wait(timeout: deadline()) == .success)
                stop.mutate { $0 = true }
                checks.expect(senderDone.wait(timeout: deadline()) == .success)
                checks.expect(target.flush())
                checks.expect(
                    history.startsAfterStop.isEmpty,
                    "round \(round): \(history.startsAfterStop) after the cancel"
                )
                checks.expect(
                    history.marks.value == [.started(1), .started(2), .started(3), .stopped],
                    "round \(round)"
                )
            }
        }
    }
}

/// What the callbacks of one round saw: whether the subscription was stopped, and how many calls started after.
///
/// Atomics, not locks: the package's locks have chaos points, which would pause a callback between its start and
/// its record of it.
private final class StopProbe: Sendable {
    let stopped = Atomic<Bool>(false)
    let late = Atomic<Int>(0)

    /// A callback's first line.
    func callbackStarted() {
        if self.stopped.load(ordering: .sequentiallyConsistent) { self.late.add(1, ordering: .relaxed) }
    }
}

/// Holds a drain at the subscriber-call chaos point, once armed: where it has an event and has not yet looked
/// whether it may call.
private final class CallWindow: Sendable {
    private let armed = Atomic<Bool>(false)
    /// Signalled by the armed drain when it is held at the point.
    let reached = DispatchSemaphore(value: 0)
    /// Signalled by the test to let the drain go on.
    let resume = DispatchSemaphore(value: 0)

    /// Holds the next drain that comes to the point.
    func arm() {
        self.armed.store(true, ordering: .sequentiallyConsistent)
    }

    /// The chaos points' observer.
    func observe(_ point: ChaosPoint) {
        guard point == .subscriberCall,
            self.armed.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged
        else { return }
        self.reached.signal()
        _ = self.resume.wait(timeout: deadline())
    }
}

/// Runs `rounds` rounds in which a sender streams values to a subscriber on `route`, the drain is held where it has
/// taken the second value and not yet called, and the caller cancels the subscription (or releases it) there, marks
/// it stopped and lets the drain go on.
///
/// - Returns: How many callbacks started after the stop had returned, and what else went wrong.
private func lateCallsAfterStop(
    route: Route,
    releases: Bool,
    rounds: Int,
    window: CallWindow
) -> (late: Int, failures: [String]) {
    var late = 0
    var failures: [String] = []
    for round in 0..<rounds {
        weak var releasedSubject: CallbackSubject<Int, Never>?
        do {
            let subject = CallbackSubject<Int, Never>()
            releasedSubject = subject
            let target = FlushableRoute.make(route)
            let probe = StopProbe()
            let underWay = DispatchSemaphore(value: 0)
            let armed = DispatchSemaphore(value: 0)
            let holder = AtomicBox<CallbackSubscription?>(
                subject.subscribe(on: target.queue) { value in
                    probe.callbackStarted()
                    if value == 1 {
                        underWay.signal()
                        _ = armed.wait(timeout: deadline())  // so that the next value's delivery is the one held
                    }
                }
            )
            let senderDone = DispatchSemaphore(value: 0)
            // The sender does not own the subject: this thread releases it, so that no other thread is still
            // freeing it when the exit test's process ends (LeakSanitizer reports a subject freed mid-exit).
            onNewThread { [unowned(unsafe) subject] in
                for value in 1...200 { subject.send(value) }
                senderDone.signal()
            }
            guard underWay.wait(timeout: deadline()) == .success else {
                failures.append("round \(round): no value was delivered")
                break
            }
            window.arm()
            armed.signal()
            guard window.reached.wait(timeout: deadline()) == .success else {
                failures.append("round \(round): no delivery reached the subscriber-call point")
                break
            }
            if releases {
                holder.mutate { $0 = nil }  // the last reference: its deinit cancels
            } else {
                holder.value?.cancel()
            }
            probe.stopped.store(true, ordering: .sequentiallyConsistent)
            window.resume.signal()
            guard senderDone.wait(timeout: deadline()) == .success, target.flush() else {
                failures.append("round \(round): the sender or the route did not finish")
                break
            }
            late += probe.late.load(ordering: .relaxed)
            withExtendedLifetime(holder) {}
        }
        // Nothing that the round started (the subscription, its drain, the route) keeps the subject.
        guard eventually({ releasedSubject == nil }) else {
            failures.append("round \(round): the subject was not released")
            break
        }
    }
    return (late, failures)
}

/// A `cancel()` that lands between a drain's taking an event and its call.
///
/// The chaos points' observer holds the drain right there (the subscriber-call point) while the test cancels, so
/// every round meets the window that random schedules meet about once in thousands of rounds. Each test runs in a
/// process of its own, since schedule chaos and its observer are global.
@Suite(
    "CallbackSubscription: no call starts after cancel() returns, cancelled at the call's door",
    .timeLimit(.minutes(2))
)
struct CallbackSubscriptionWindowTests {
    @Test(
        "no callback starts after cancel() or the release returned, when it lands between the take and the call",
        arguments: Route.allCases.indices,
        [false, true]
    )
    func noLateCallFromTheWindow(routeIndex: Int, releases: Bool) async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            [routeIndex, releases] in
            let window = CallWindow()
            ScheduleChaos.pointObserver = { window.observe($0) }
            ScheduleChaos.seed = 25
            let route = Route.allCases[routeIndex]
            let (late, failures) = await offPool {
                lateCallsAfterStop(route: route, releases: releases, rounds: 20, window: window)
            }
            print("late calls: \(late) in 20 rounds; \(failures)")
            fflush(nil)
            exit(0)  // The parent checks the count: a failed exit test hands back no output to show.
        }
        let output = text(result?.standardOutputContent)
        #expect(
            output.contains("late calls: 0 in"),
            "route \(Route.allCases[routeIndex]), released: \(releases): \(output)"
        )
    }
}
