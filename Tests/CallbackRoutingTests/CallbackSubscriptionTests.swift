import CallbackRouting
import Dispatch
import Foundation
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
private final class History: Sendable {
    let marks = AtomicBox<[Mark]>([])
    let started = DispatchSemaphore(value: 0)

    func callbackStarted(_ value: Int) {
        self.marks.mutate { $0.append(.started(value)) }
        self.started.signal()
    }

    func stopReturned() {
        self.marks.mutate { $0.append(.stopped) }
    }

    /// The values of the callbacks that started after `cancel()` (or the release) returned.
    var startsAfterStop: [Int] {
        let marks = self.marks.value
        guard let stop = marks.firstIndex(of: .stopped) else { return [] }
        return marks[(stop + 1)...].compactMap { mark in
            if case .started(let value) = mark { return value }
            return nil
        }
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

    @Test("two subscribers on two queues cancelling each other from their callbacks, many rounds, do not deadlock")
    func mutualCancelManyRounds() async throws {
        try await offPoolTest { checks in
            let queueA = DispatchQueue(label: "test.mutual.rounds.a")
            let queueB = DispatchQueue(label: "test.mutual.rounds.b")
            for round in 0..<10_000 {
                let subject = CallbackSubject<Int, Never>()
                let holderA = AtomicBox<CallbackSubscription?>(nil)
                let holderB = AtomicBox<CallbackSubscription?>(nil)
                let calls = AtomicBox(0)
                holderA.mutate { slot in
                    slot = subject.subscribe(on: .dispatch(queueA)) { _ in
                        calls.mutate { $0 += 1 }
                        holderB.value?.cancel()
                    }
                }
                holderB.mutate { slot in
                    slot = subject.subscribe(on: .dispatch(queueB)) { _ in
                        calls.mutate { $0 += 1 }
                        holderA.value?.cancel()
                    }
                }
                subject.send(round)
                let drained = DispatchGroup()
                for queue in [queueA, queueB] {
                    drained.enter()
                    queue.async { drained.leave() }
                }
                guard drained.wait(timeout: deadline()) == .success else {
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
        arguments: [Route.untouch, .serialQueue, .concurrentQueue, .operationQueue, .mainAsync],
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
                // A call whose drain took it before cancel() did counts as already running, even if its first line comes
                // a moment after cancel() returned; calls never overlap, so there is at most one such call.
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
        arguments: [Route.untouch, .serialQueue, .concurrentQueue, .operationQueue, .mainAsync]
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
