/// A subscriber's hold on a ``CallbackSubject``: cancel it, or release it, to stop receiving.
///
/// After ``cancel()`` returns, or the subscription is released, no call of the subscriber starts: values still queued
/// for it are dropped, and so is an event that a drain on another thread had taken but not yet handed to the callback.
/// A call starts at the drain's last look at the cancellation, right before it calls the callback.
///
/// ``cancel()`` waits for no callback: a call already running, on another thread or on the calling one (the subscriber
/// cancelling itself from its callback), finishes on its own. So two callbacks may cancel each other's subscriptions,
/// and a subscription may be cancelled while holding anything its callback waits for. The price of never waiting: a
/// drain on another thread that made its last look just before ``cancel()``, and was then descheduled, runs the
/// callback's first line after ``cancel()`` has returned. Keep what a callback uses alive through the callback itself,
/// by capturing it; to make a callback stop touching state you tear down, set a flag of your own before ``cancel()``
/// and check it first in the callback. Keep the subscription for as long as you want values, as with Combine's
/// `AnyCancellable`.
///
/// Once the subscriber has received the completion, or ``cancel()`` has run, the subject keeps neither its callbacks
/// nor what they capture (a call running then keeps them until it returns): callbacks may capture the object that
/// keeps the subscription without making a cycle that outlives the subscription's end.
public final class CallbackSubscription: Sendable {
    private let cancellation: AtomicBox<(@Sendable () -> Void)?>

    init(cancellation: @escaping @Sendable () -> Void) {
        self.cancellation = AtomicBox(cancellation)
    }

    deinit {
        self.cancel()
    }

    /// Stops delivery to this subscriber; once it returns, no call of the subscriber starts.
    ///
    /// It waits for no callback: one already running, on any thread, finishes, and so does one whose drain made its
    /// last look at the cancellation just before (see ``CallbackSubscription``). Calling it again, from inside the
    /// subscriber's own callback, or from another subscriber's callback, is safe.
    public func cancel() {
        let cancellation = self.cancellation.mutate { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        cancellation?()
    }
}
