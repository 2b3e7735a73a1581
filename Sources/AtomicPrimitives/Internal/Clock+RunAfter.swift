import Dispatch

extension Clock where Duration == Swift.Duration {
    /// Runs `body` once `delay` has passed on this clock: how the package's doctors look again after their patience.
    ///
    /// A delay too long to represent in nanoseconds never comes. On the continuous and the suspending clock it is a
    /// Dispatch timer on a global queue. On another clock, such as a test's `TestClock`, it is a task that sleeps
    /// on the clock until `delay` from now (measured now, not when the task starts) and then runs `body`; a test
    /// moves the clock past the deadline instead of waiting for real time.
    ///
    /// - Parameters:
    ///   - delay: How long from now; zero or less runs `body` as soon as it can.
    ///   - body: The work; it runs on a global queue or in a task of its own.
    package func runAfter(_ delay: Duration, _ body: @escaping @Sendable () -> Void) {
        // A delay too long to represent never comes, on every clock alike (one of zero or less is due now).
        let span = Deadline.Span(delay)
        guard span != .unlimited else { return }
        if self.isMeasuredByDispatch {
            DispatchQueue.global().asyncAfter(deadline: Deadline(after: span).dispatchTime, execute: body)
        } else {
            let deadline = span == .none ? self.now : self.now.advanced(by: delay)
            Task.detached {
                do { try await self.sleep(until: deadline, tolerance: nil) } catch { return }
                body()
            }
        }
    }

    /// Whether Dispatch measures this clock's time too: the continuous and the suspending clock.
    ///
    /// A delay on them is better waited with a Dispatch timer, which a cancel releases at once; their own sleeps, cancelled, keep about
    /// 700 bytes each until their deadline. Any other clock (a test's) gets a task asleep on it.
    package var isMeasuredByDispatch: Bool {
        self is ContinuousClock || self is SuspendingClock
    }
}
