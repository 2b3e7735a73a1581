import CallbackRouting
import Dispatch
import TestSupport
import Testing

@Suite("CallbackSubject: a subscriber lets go of its callbacks once nothing can call them", .timeLimit(.minutes(1)))
struct SubjectSubscriberLifetimeTests {
    /// Subscribes callbacks that capture `tracked`, which nothing else holds once this returns; `received` is
    /// signalled at the end of each value's call, `completed` at the end of the completion's.
    private static func subscribe(
        to subject: CallbackSubject<Int, Never>,
        on route: CallbackQueue,
        capturing tracked: LifetimeProbe.Tracked,
        received: DispatchSemaphore,
        completed: DispatchSemaphore
    ) -> CallbackSubscription {
        subject.subscribe(on: route) { _ in
            withExtendedLifetime(tracked) {}
            received.signal()
        } receiveCompletion: { _ in
            withExtendedLifetime(tracked) {}
            completed.signal()
        }
    }

    /// Subscribes a callback that signals `inside`, waits for `proceed`, then uses `tracked`, which nothing else holds
    /// once this returns, and notes its index in `used`.
    private static func subscribeWaiting(
        to subject: CallbackSubject<Int, Never>,
        on route: CallbackQueue,
        capturing tracked: LifetimeProbe.Tracked,
        inside: DispatchSemaphore,
        proceed: DispatchSemaphore,
        used: AtomicBox<[Int]>
    ) -> CallbackSubscription {
        subject.subscribe(on: route) { _ in
            inside.signal()
            hold(until: proceed)
            used.mutate { $0.append(tracked.index) }  // after the cancel: still alive
        }
    }

    @Test(
        "after the completion is delivered, what the callbacks capture is released, the subscription still held",
        arguments: Route.allCases
    )
    func completionReleasesCaptures(route: Route) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Never>()
            let target = FlushableRoute.make(route)
            let probe = LifetimeProbe()
            let received = DispatchSemaphore(value: 0)
            let completed = DispatchSemaphore(value: 0)
            let subscription = Self.subscribe(
                to: subject,
                on: target.queue,
                capturing: probe.make(),
                received: received,
                completed: completed
            )
            subject.send(1)
            subject.send(completion: .finished)
            checks.expect(received.wait(timeout: deadline()) == .success)
            checks.expect(completed.wait(timeout: deadline()) == .success)
            checks.expect(target.flush())  // the drain that delivered the completion has returned
            checks.expect(probe.alive == 0, "the callbacks still hold what they capture after the completion")
            withExtendedLifetime(subscription) {}
        }
    }

    @Test(
        "cancel() with no callback running releases what the callbacks capture before it returns, a send in flight",
        arguments: Route.allCases
    )
    func cancelReleasesCaptures(route: Route) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Never>()
            let target = FlushableRoute.make(route)
            let probe = LifetimeProbe()
            let received = DispatchSemaphore(value: 0)
            let subscription = Self.subscribe(
                to: subject,
                on: target.queue,
                capturing: probe.make(),
                received: received,
                completed: DispatchSemaphore(value: 0)
            )
            let parked = ParkedSend(subject)  // subscribed after: the send reaches it after the subscriber under test
            parked.send(1)
            checks.expect(parked.waitUntilParked())
            checks.expect(received.wait(timeout: deadline()) == .success)
            checks.expect(target.flush())  // the drain has ended
            subscription.cancel()
            checks.expect(probe.alive == 0, "the callbacks still hold what they capture after cancel()")
            checks.expect(parked.finish())
            withExtendedLifetime(subscription) {}
        }
    }

    @Test(
        "cancel() while the callback runs elsewhere: it keeps its captures until it returns, then they are released",
        arguments: Route.allCases
    )
    func cancelDuringCallbackReleasesAfterIt(route: Route) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Never>()
            let target = FlushableRoute.make(route)
            let probe = LifetimeProbe()
            let inside = DispatchSemaphore(value: 0)
            let proceed = DispatchSemaphore(value: 0)
            let used = AtomicBox<[Int]>([])
            let subscription = Self.subscribeWaiting(
                to: subject,
                on: target.queue,
                capturing: probe.make(),
                inside: inside,
                proceed: proceed,
                used: used
            )
            let parked = ParkedSend(subject)
            parked.send(1)  // on untouch, the callback under test runs on the sending thread, before the parked one
            checks.expect(inside.wait(timeout: deadline()) == .success)
            subscription.cancel()
            checks.expect(probe.alive == 1, "released while its callback still ran")
            proceed.signal()
            checks.expect(parked.waitUntilParked())
            checks.expect(target.flush())  // the call under test has returned
            checks.expect(used.value == [1])
            checks.expect(probe.alive == 0, "the callbacks still hold what they capture after the running call ended")
            checks.expect(parked.finish())
            withExtendedLifetime(subscription) {}
        }
    }
}

/// A subscriber on ``CallbackQueue/untouch`` whose call parks the send that reaches it until ``finish()``.
///
/// A send in flight holds every subscriber it sends to, as a snapshot of the subject's list; so while one is parked,
/// a subscriber it reached stays alive after its subscription is cancelled, and only what the subscriber lets go of
/// itself is released.
private final class ParkedSend: Sendable {
    private let subject: CallbackSubject<Int, Never>
    private let inside = DispatchSemaphore(value: 0)
    private let proceed = DispatchSemaphore(value: 0)
    private let returned = DispatchSemaphore(value: 0)
    private let subscription: CallbackSubscription

    init(_ subject: CallbackSubject<Int, Never>) {
        self.subject = subject
        self.subscription = subject.subscribe { [inside, proceed] _ in
            inside.signal()
            hold(until: proceed)
        }
    }

    /// Sends `value` from a new thread.
    func send(_ value: Int) {
        onNewThread {
            self.subject.send(value)
            self.returned.signal()
        }
    }

    /// Waits until the send is parked in this subscriber's call; `false` at the deadline.
    func waitUntilParked() -> Bool {
        self.inside.wait(timeout: deadline()) == .success
    }

    /// Lets the send go on, and waits until it has returned; `false` at the deadline.
    func finish() -> Bool {
        self.proceed.signal()
        return self.returned.wait(timeout: deadline()) == .success
    }
}
