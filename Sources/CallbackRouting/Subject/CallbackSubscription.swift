/// A subscriber's hold on a ``CallbackSubject``: cancel it, or release it, to stop receiving.
///
/// No `receiveValue` or `receiveCompletion` call starts after ``cancel()`` returns or after the subscription is
/// released; values already queued for the subscriber are dropped. ``cancel()`` waits for no callback: a call already
/// running, on another thread or on the calling one (the subscriber cancelling itself from its callback), finishes
/// on its own. A call has started once the subscriber's drain has taken its event, just before the callback is
/// entered. So two callbacks may cancel each other's subscriptions, and a subscription may be cancelled while
/// holding anything its callback waits for. Keep the subscription for as long as you want values, as with Combine's
/// `AnyCancellable`.
///
/// > Note: A callback running on another thread may still be running when ``cancel()`` returns. Wait for it with
/// > your own signal if you must, for example before releasing what the callback uses.
public final class CallbackSubscription: Sendable {
    private let cancellation: AtomicBox<(@Sendable () -> Void)?>

    init(cancellation: @escaping @Sendable () -> Void) {
        self.cancellation = AtomicBox(cancellation)
    }

    deinit {
        self.cancel()
    }

    /// Stops delivery to this subscriber; once it returns, no callback of the subscriber starts.
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
