/// A subscriber's hold on a ``CallbackSubject``: cancel it, or release it, to stop receiving.
///
/// After ``cancel()`` returns, or the subscription is released, no call of the subscriber starts: values still queued
/// for it are dropped, and so is an event that a drain on another thread had taken but not yet handed to the callback
/// (the drain looks once more right before it calls). ``cancel()`` waits for no callback: a call already running, on
/// another thread or on the calling one (the subscriber cancelling itself from its callback), finishes on its own; so
/// keep what a running callback uses alive through the callback itself, by capturing it. Two callbacks may cancel
/// each other's subscriptions, and a subscription may be cancelled while holding anything its callback waits for.
/// Keep the subscription for as long as you want values, as with Combine's `AnyCancellable`.
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
    /// It waits for no callback: one already running, on any thread, finishes. Calling it again, from inside the
    /// subscriber's own callback, or from another subscriber's callback, is safe.
    public func cancel() {
        let cancellation = self.cancellation.mutate { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        cancellation?()
    }
}
