import Synchronization

/// Ends a manual-completion command once both its closure has returned and `done` has been called.
///
/// `done` may be called before or after the closure returns, from any thread; calls after the first do nothing.
@usableFromInline
final class CompletionLatch: Sendable {
    private let remaining = Atomic<Int>(2)
    private let doneCalled = Atomic<Bool>(false)
    private let onComplete: @Sendable () -> Void

    /// - Parameter onComplete: Runs once, on the thread that makes the second of the two arrivals.
    @usableFromInline
    init(onComplete: @escaping @Sendable () -> Void) {
        self.onComplete = onComplete
    }

    /// The `done` handed to the command's closure.
    @usableFromInline
    var done: CommandCompletionClosure {
        { [self] in
            guard !self.doneCalled.exchange(true, ordering: .acquiringAndReleasing) else { return }
            self.arrive()
        }
    }

    /// Records that the command's closure has returned.
    @usableFromInline
    func closureReturned() {
        self.arrive()
    }

    private func arrive() {
        if self.remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            self.onComplete()
        }
    }
}
