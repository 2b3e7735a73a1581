import CallbackRouting
import Dispatch
import TestSupport
import Testing

@Suite("CallbackSubject: a subscriber lets go of its callbacks once nothing can call them", .timeLimit(.minutes(1)))
struct SubjectSubscriberLifetimeTests {
    /// Subscribes callbacks that capture `tracked`, which nothing else holds once this returns.
    ///
    /// - Parameters:
    ///   - received: Signalled at the end of each value's call.
    ///   - completed: Signalled at the end of the completion's call.
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
            _ = proceed.wait(timeout: deadline())
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
        "cancel() with no callback running releases what the callbacks capture before it returns",
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
            subject.send(1)
            checks.expect(received.wait(timeout: deadline()) == .success)
            checks.expect(target.flush())  // the drain has ended
            subscription.cancel()
            checks.expect(probe.alive == 0, "the callbacks still hold what they capture after cancel()")
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
            let sent = DispatchSemaphore(value: 0)
            onNewThread {
                subject.send(1)  // on untouch, the callback runs here, inside send
                sent.signal()
            }
            checks.expect(inside.wait(timeout: deadline()) == .success)
            subscription.cancel()
            checks.expect(probe.alive == 1, "released while its callback still ran")
            proceed.signal()
            checks.expect(sent.wait(timeout: deadline()) == .success)
            checks.expect(target.flush())
            checks.expect(used.value == [1])
            checks.expect(probe.alive == 0, "the callbacks still hold what they capture after the running call ended")
            withExtendedLifetime(subscription) {}
        }
    }
}
