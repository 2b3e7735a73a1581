/// A subscriber's hold on a ``CallbackSubject``: cancel it, or release it, to stop receiving.
///
/// No `receiveValue` or `receiveCompletion` call starts after ``cancel()`` returns or after the subscription is
/// released; values already queued for the subscriber are dropped. A call that is already running on another thread
/// is waited for, since it cannot be told apart from one about to start; a call running on the calling thread (the
/// subscriber cancelling itself from its callback) is not. Keep the subscription for as long as you want values, as
/// with Combine's `AnyCancellable`.
///
/// > Warning: Because ``cancel()`` waits for a callback running on another thread, do not cancel a subscription
/// > while holding something that its callback waits for (a lock, or the queue a callback `sync`s onto).
public final class CallbackSubscription: Sendable {
    private let cancellation: AtomicBox<(@Sendable () -> Void)?>

    init(cancellation: @escaping @Sendable () -> Void) {
        self.cancellation = AtomicBox(cancellation)
    }

    deinit {
        self.cancel()
    }

    /// Stops delivery to this subscriber; once it returns, no callback of the subscriber runs or starts, but one that
    /// called it.
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
