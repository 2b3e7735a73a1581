import Synchronization

/// Ends a manual-completion command once both its closure has returned and `done` has been called.
///
/// `done` may be called before or after the closure returns, from any thread; calls after the first do nothing.
@usableFromInline
final class CompletionLatch: @unchecked Sendable {
    // Safety: `onComplete` is read and cleared only by the arrival that brings `remaining` to 0, which happens once,
    // and after every other arrival (acquiring and releasing); so no two threads touch it.
    private let remaining = Atomic<Int>(2)
    private let doneCalled = Atomic<Bool>(false)
    private var onComplete: (@Sendable () -> Void)?

    /// - Parameter onComplete: Runs once, on the thread that makes the second of the two arrivals; released then, so
    ///   that a latch kept longer (by the value's ``ManualCompletionWatch``) keeps nothing it captured.
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

    /// Whether `done` has been called.
    @usableFromInline
    var isDone: Bool {
        self.doneCalled.load(ordering: .acquiring)
    }

    /// Records that the command's closure has returned.
    @usableFromInline
    func closureReturned() {
        self.arrive()
    }

    /// Counts one arrival; the second runs `onComplete`.
    private func arrive() {
        guard self.remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        let onComplete = self.onComplete
        self.onComplete = nil
        onComplete?()
    }
}
