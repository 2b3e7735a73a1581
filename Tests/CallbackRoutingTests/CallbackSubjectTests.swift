import CallbackRouting
import Dispatch
import Foundation
import TestSupport
import Testing

private struct Failure: Error, Equatable {}

/// The routes a subscriber can choose, each with a fresh queue of its own.
enum Route: String, CaseIterable, CustomTestStringConvertible {
    case untouch, mainAsync, mainCurrentOrAsync, serialQueue, concurrentQueue, operationQueue

    var testDescription: String { rawValue }

    func make() -> CallbackQueue {
        switch self {
        case .untouch: .untouch
        case .mainAsync: .mainAsync
        case .mainCurrentOrAsync: .mainCurrentOrAsync
        case .serialQueue: .dispatch(DispatchQueue(label: "test.subject.serial"))
        case .concurrentQueue: .dispatch(DispatchQueue(label: "test.subject.concurrent", attributes: .concurrent))
        case .operationQueue: .operationQueue(OperationQueue())
        }
    }
}

/// What one subscriber saw: values in arrival order, and whether two calls ever overlapped.
private final class Recorder: Sendable {
    let values = AtomicBox<[Int]>([])
    let completions = AtomicBox<[SubjectCompletion<Failure>]>([])
    let inside = AtomicBox(0)
    let overlapped = AtomicBox(false)
    let received = DispatchSemaphore(value: 0)

    func receive(_ value: Int) {
        let concurrent = inside.mutate { count -> Int in
            count += 1
            return count
        }
        if concurrent > 1 { overlapped.mutate { $0 = true } }
        values.mutate { $0.append(value) }
        inside.mutate { $0 -= 1 }
        received.signal()
    }

    func complete(_ completion: SubjectCompletion<Failure>) {
        completions.mutate { $0.append(completion) }
        received.signal()
    }

    /// Waits until `count` callbacks (values or completions) have arrived.
    func waitFor(_ count: Int) -> Bool {
        (0..<count).allSatisfy { _ in received.wait(timeout: deadline()) == .success }
    }
}

@Suite("CallbackSubject", .timeLimit(.minutes(1)))
struct CallbackSubjectTests {
    @Test("each subscriber receives values in send order without overlapping calls", arguments: Route.allCases)
    func orderOnEachRoute(route: Route) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Failure>()
            let recorder = Recorder()
            let subscription = subject.subscribe(on: route.make(), receiveValue: recorder.receive)
            for value in 1...200 { subject.send(value) }
            checks.expect(recorder.waitFor(200))
            checks.expect(recorder.values.value == Array(1...200))
            checks.expect(recorder.overlapped.value == false)
            subscription.cancel()
        }
    }

    @Test("values sent concurrently from many threads reach every subscriber exactly once")
    func concurrentSenders() async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Failure>()
            let recorders = [Recorder(), Recorder(), Recorder()]
            let routes: [CallbackQueue] = [.untouch, .dispatch(DispatchQueue(label: "test.fanout")), .mainAsync]
            let subscriptions = zip(recorders, routes).map { recorder, route in
                subject.subscribe(on: route, receiveValue: recorder.receive)
            }
            let perThread = 250
            checks.expect(
                runOnThreads(contendingThreads * 2) { thread in
                    for index in 0..<perThread { subject.send(thread * perThread + index) }
                }
            )
            let total = contendingThreads * 2 * perThread
            for recorder in recorders {
                checks.expect(recorder.waitFor(total))
                checks.expect(recorder.values.value.sorted() == Array(0..<total))
                checks.expect(recorder.overlapped.value == false)
            }
            withExtendedLifetime(subscriptions) {}
        }
    }

    @Test("with untouch and one sender, a value is delivered before send returns")
    func untouchDeliversBeforeSendReturns() {
        let subject = CallbackSubject<Int, Failure>()
        let recorder = Recorder()
        let subscription = subject.subscribe(receiveValue: recorder.receive)
        subject.send(1)
        #expect(recorder.values.value == [1])
        subject.send(2)
        #expect(recorder.values.value == [1, 2])
        subscription.cancel()
    }

    @Test("a value sent from inside a callback reaches that subscriber after the callback returns")
    func reentrantSend() {
        let subject = CallbackSubject<Int, Failure>()
        let log = AtomicBox<[String]>([])
        let subscription = subject.subscribe { value in
            log.mutate { $0.append("start \(value)") }
            if value == 1 { subject.send(2) }
            log.mutate { $0.append("end \(value)") }
        }
        subject.send(1)
        #expect(log.value == ["start 1", "end 1", "start 2", "end 2"])
        subscription.cancel()
    }

    @Test("cancel stops delivery, and so does releasing the subscription")
    func cancelAndRelease() {
        let subject = CallbackSubject<Int, Failure>()
        let cancelled = Recorder()
        let released = Recorder()
        let subscription = subject.subscribe(receiveValue: cancelled.receive)
        var releasedSubscription: CallbackSubscription? = subject.subscribe(receiveValue: released.receive)
        subject.send(1)
        #expect(subject.subscriberCount == 2)
        subscription.cancel()
        releasedSubscription = nil
        subject.send(2)
        #expect(cancelled.values.value == [1])
        #expect(released.values.value == [1])
        #expect(subject.subscriberCount == 0)
        #expect(releasedSubscription == nil)
    }

    @Test("values queued for a subscriber are dropped when it cancels")
    func cancelDropsQueuedValues() async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Failure>()
            let queue = DispatchQueue(label: "test.subject.held")
            let recorder = Recorder()
            let release = DispatchSemaphore(value: 0)
            queue.async { hold(until: release) }  // holds the queue, so values wait in the mailbox
            let subscription = subject.subscribe(on: .dispatch(queue), receiveValue: recorder.receive)
            for value in 1...5 { subject.send(value) }
            subscription.cancel()
            release.signal()
            let drained = DispatchSemaphore(value: 0)
            queue.async { drained.signal() }
            checks.expect(drained.wait(timeout: deadline()) == .success)
            checks.expect(recorder.values.value.isEmpty)
        }
    }

    @Test("a subscriber may cancel itself inside its own callback")
    func cancelInsideCallback() {
        let subject = CallbackSubject<Int, Failure>()
        let recorder = Recorder()
        let holder = AtomicBox<CallbackSubscription?>(nil)
        let subscription = subject.subscribe { value in
            recorder.receive(value)
            holder.value?.cancel()
        }
        holder.mutate { $0 = subscription }
        subject.send(1)
        subject.send(2)
        #expect(recorder.values.value == [1])
        #expect(subject.subscriberCount == 0)
    }

    @Test("after a completion, sends are ignored and a new subscriber gets the completion at once")
    func completion() {
        let subject = CallbackSubject<Int, Failure>()
        let early = Recorder()
        let subscription = subject.subscribe(receiveValue: early.receive, receiveCompletion: early.complete)
        subject.send(1)
        subject.send(completion: .failure(Failure()))
        subject.send(2)
        subject.send(completion: .finished)
        #expect(early.values.value == [1])
        #expect(early.completions.value == [.failure(Failure())])
        #expect(subject.subscriberCount == 0)

        let late = Recorder()
        let lateSubscription = subject.subscribe(receiveValue: late.receive, receiveCompletion: late.complete)
        #expect(late.completions.value == [.failure(Failure())], "delivered before subscribe returned")
        #expect(late.values.value.isEmpty)
        withExtendedLifetime((subscription, lateSubscription)) {}
    }

    @Test("callbacks run outside the subject's lock: they may subscribe, count and send")
    func callbacksMayUseTheSubject() {
        let subject = CallbackSubject<Int, Failure>()
        let counts = AtomicBox<[Int]>([])
        let inner = AtomicBox<[CallbackSubscription]>([])
        let subscription = subject.subscribe { value in
            counts.mutate { $0.append(subject.subscriberCount) }
            if value == 1 {
                let added = subject.subscribe { _ in }
                inner.mutate { $0.append(added) }
            }
        }
        subject.send(1)
        subject.send(2)
        #expect(counts.value == [1, 2])
        withExtendedLifetime(subscription) {}
    }
}

@Suite("CallbackSubject: sends and cancels from inside callbacks", .timeLimit(.minutes(1)))
struct CallbackSubjectReentrancyTests {
    @Test(
        "a send from inside one subscriber's callback keeps send order for every later subscriber",
        arguments: Route.allCases,
        Route.allCases
    )
    func sendInsideCallback(first: Route, second: Route) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Failure>()
            let a = Recorder()
            let b = Recorder()
            let subscriptionA = subject.subscribe(on: first.make()) { value in
                if value == 0 { subject.send(1) }
                a.receive(value)
            }
            let subscriptionB = subject.subscribe(on: second.make(), receiveValue: b.receive)
            subject.send(0)
            checks.expect(a.waitFor(2))
            checks.expect(b.waitFor(2))
            checks.expect(a.values.value == [0, 1])
            checks.expect(b.values.value == [0, 1], "B subscribed after A, and still sees send order")
            withExtendedLifetime((subscriptionA, subscriptionB)) {}
        }
    }

    @Test(
        "a completion sent from inside a callback reaches every subscriber after the values sent before it",
        arguments: Route.allCases,
        Route.allCases
    )
    func completionInsideCallback(first: Route, second: Route) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Failure>()
            let a = Recorder()
            let b = Recorder()
            let subscriptionA = subject.subscribe(
                on: first.make(),
                receiveValue: { value in
                    subject.send(completion: .finished)
                    a.receive(value)
                },
                receiveCompletion: a.complete
            )
            let subscriptionB = subject.subscribe(
                on: second.make(),
                receiveValue: b.receive,
                receiveCompletion: b.complete
            )
            subject.send(0)
            checks.expect(a.waitFor(2))
            checks.expect(b.waitFor(2))
            checks.expect(b.values.value == [0], "the value sent before the completion is not lost")
            checks.expect(b.completions.value == [.finished])
            checks.expect(a.values.value == [0])
            checks.expect(a.completions.value == [.finished])
            withExtendedLifetime((subscriptionA, subscriptionB)) {}
        }
    }

    @Test("a subscriber cancelled while an earlier subscriber's callback runs that send gets no callback for it")
    func cancelledBetweenClaimAndDelivery() async throws {
        try await offPoolTest { checks in
            // The send has put the value in both mailboxes and delivers them in turn on its own thread: B's value is
            // claimed, but B's delivery has not started while A's callback runs. Cancelling B then must win.
            let subject = CallbackSubject<Int, Never>()
            let insideA = DispatchSemaphore(value: 0)
            let cancelledB = DispatchSemaphore(value: 0)
            let a = subject.subscribe { _ in
                insideA.signal()
                hold(until: cancelledB)
            }
            let callsToB = AtomicBox(0)
            let b = subject.subscribe { _ in callsToB.mutate { $0 += 1 } }
            let sent = DispatchSemaphore(value: 0)
            onNewThread {
                subject.send(1)
                sent.signal()
            }
            checks.expect(insideA.wait(timeout: deadline()) == .success)
            b.cancel()
            cancelledB.signal()
            checks.expect(sent.wait(timeout: deadline()) == .success)
            checks.expect(callsToB.value == 0, "B's callback ran after its cancel() returned")
            withExtendedLifetime(a) {}
        }
    }

    @Test(
        "cancel() from inside the subscriber's own callback returns at once, on every route",
        arguments: Route.allCases
    )
    func cancelInsideOwnCallback(route: Route) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Never>()
            let box = AtomicBox<CallbackSubscription?>(nil)
            let calls = AtomicBox(0)
            let returned = DispatchSemaphore(value: 0)
            box.mutate { slot in
                slot = subject.subscribe(on: route.make()) { _ in
                    calls.mutate { $0 += 1 }
                    box.value?.cancel()
                    returned.signal()
                }
            }
            subject.send(1)
            subject.send(2)
            checks.expect(returned.wait(timeout: deadline()) == .success)
            subject.send(3)
            checks.expect(returned.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
            checks.expect(calls.value == 1)
        }
    }
}
