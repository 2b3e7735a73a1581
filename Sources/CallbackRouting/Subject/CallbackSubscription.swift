/// A subscriber's hold on a ``CallbackSubject``: cancel it, or release it, to stop receiving.
///
/// After ``cancel()`` returns, or the subscription is released, the subscriber's drain takes no more events: values
/// still queued for it are dropped, and no new call is begun. ``cancel()`` waits for no callback: a call already
/// begun, on another thread or on the calling one (the subscriber cancelling itself from its callback), finishes on
/// its own. A call is begun when the drain takes its event from the subscriber's mailbox, under the mailbox's lock, a
/// few instructions before the callback's first line. So two callbacks may cancel each other's subscriptions, and a
/// subscription may be cancelled while holding anything its callback waits for. Keep the subscription for as long as
/// you want values, as with Combine's `AnyCancellable`.
///
/// Cancelled from the subscriber's own callback, no later call reaches it at all. Cancelled from another thread, one call that was begun just before may still reach its first line just
/// after ``cancel()`` returns (and a call already running may still be running). So keep what a callback uses alive
/// through the callback itself, by capturing it, rather than tearing it down right after ``cancel()``: making
/// ``cancel()`` wait for such a call is what made two callbacks that cancel each other deadlock.
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

    /// Stops delivery to this subscriber; once it returns, no new call of the subscriber is begun.
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
