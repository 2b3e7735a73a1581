/// A subscriber's hold on a ``CallbackSubject``: cancel it, or release it, to stop receiving.
///
/// No `receiveValue` or `receiveCompletion` call starts after ``cancel()`` returns or after the subscription is
/// released; values already queued for the subscriber are dropped. `cancel()` does not wait for a call that is
/// already running on another thread. Keep the subscription for as long as you want values, as with Combine's
/// `AnyCancellable`.
public final class CallbackSubscription: Sendable {
    private let cancellation: AtomicBox<(@Sendable () -> Void)?>

    init(cancellation: @escaping @Sendable () -> Void) {
        self.cancellation = AtomicBox(cancellation)
    }

    deinit {
        self.cancel()
    }

    /// Stops delivery to this subscriber.
    ///
    /// Calling it again, or from inside the subscriber's own callback, is safe.
    public func cancel() {
        let cancellation = self.cancellation.mutate { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        cancellation?()
    }
}
