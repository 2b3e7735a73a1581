import AtomicPrimitives
import Dispatch

/// The wait before a retry, on a clock: it calls back on a queue when the delay has passed, and ``cancel()`` ends it
/// at once, timer and all.
///
/// On the continuous and the suspending clock it is a Dispatch timer, which a cancel releases at once: those clocks'
/// own sleeps, cancelled, keep about 700 bytes each until their deadline, so a cancelled one-hour back-off would
/// hold memory for the hour. On any other clock (a test's) it is a task asleep on that clock, which the cancel
/// cancels; such a clock must end a cancelled sleep promptly, as `TestClock` does.
package final class RetryTimer: @unchecked Sendable {
    // Safety: `kind` is written once, in init; a Dispatch source and a task may be cancelled from any thread.
    private enum Kind {
        case dispatch(any DispatchSourceTimer)
        case task(Task<Void, Never>)
    }

    private let kind: Kind

    /// Starts a wait of `delay` on `clock`, after which `fire` runs on `queue`, unless the wait was cancelled.
    ///
    /// - Parameters:
    ///   - delay: How long to wait.
    ///   - clock: The clock on which the delay passes.
    ///   - queue: Where `fire` runs; never in a task, since what it starts may block its thread.
    ///   - fire: The work after the delay.
    package init(
        after delay: Duration,
        on clock: any Clock<Duration>,
        queue: DispatchQueue,
        _ fire: @escaping @Sendable () -> Void
    ) {
        let span = Deadline.Span(delay)
        if clock.isMeasuredByDispatch || span == .unlimited {
            // A delay too long to represent never comes: a timer that never fires, which a cancel releases.
            let timer = Self.makeDispatchTimer(after: delay, queue: queue, fire)
            timer.activate()
            self.kind = .dispatch(timer)
        } else {
            self.kind = .task(Self.sleeper(after: delay, on: clock, queue: queue, fire))
        }
    }

    deinit {
        self.cancel()  // a timer that has fired is done with; one that has not must not fire for nobody
    }

    /// Ends the wait at once: `fire` will not run, if it has not started.
    package func cancel() {
        switch self.kind {
        case .dispatch(let timer): timer.cancel()
        case .task(let task): task.cancel()
        }
    }

    /// Suspends the calling task for `delay` on `clock`: on the standard clocks with a Dispatch timer, which a cancel
    /// of the task releases at once; on any other clock with the clock's own sleep.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before the delay has passed, also if it already is.
    package static func sleep(for delay: Duration, on clock: some Clock<Duration>) async throws {
        let span = Deadline.Span(delay)
        if !clock.isMeasuredByDispatch && span != .unlimited {
            return try await clock.sleep(until: Self.deadline(after: delay, on: clock), tolerance: nil)
        }
        // On a standard clock, or for a delay too long to represent on any clock: a Dispatch timer, which never fires
        // for the latter, and which a cancel releases.
        let sleeper = DispatchSleeper()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                sleeper.start(
                    continuation,
                    timer: Self.makeDispatchTimer(after: delay, queue: .global()) {
                        sleeper.end(cancelled: false)
                    }
                )
            }
        } onCancel: {
            sleeper.end(cancelled: true)
        }
    }

    /// The instant `delay` from now on `clock`, read now: a delay of zero or less is now. (The delay is not too long
    /// to represent: such a delay has a timer that never fires instead.)
    private static func deadline<C: Clock<Duration>>(after delay: Duration, on clock: C) -> C.Instant {
        Deadline.Span(delay) == .none ? clock.now : clock.now.advanced(by: delay)
    }

    /// A task that sleeps on `clock` until `delay` from now, then runs `fire` on `queue`, unless it was cancelled
    /// first.
    ///
    /// The deadline is read here, when the attempt failed, not when the task first runs: time that passes on a test's
    /// clock before the task starts counts.
    private static func sleeper<C: Clock<Duration>>(
        after delay: Duration,
        on clock: C,
        queue: DispatchQueue,
        _ fire: @escaping @Sendable () -> Void
    ) -> Task<Void, Never> {
        let deadline = Self.deadline(after: delay, on: clock)
        return Task.detached {
            do { try await clock.sleep(until: deadline, tolerance: nil) } catch { return }  // cancelled
            queue.async(execute: fire)
        }
    }

    /// A one-shot timer on `queue`, not yet activated, that runs `fire` `delay` from now (never, for a delay too long
    /// to represent).
    private static func makeDispatchTimer(
        after delay: Duration,
        queue: DispatchQueue,
        _ fire: @escaping @Sendable () -> Void
    ) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: Deadline(after: delay).dispatchTime)
        timer.setEventHandler(handler: fire)
        return timer
    }
}

/// One ``RetryTimer/sleep(for:on:)`` on a Dispatch timer: the task's continuation and its timer, resumed once, by
/// the timer or by a cancel, whichever comes first.
private final class DispatchSleeper: Sendable {
    private enum State {
        /// The task has not yet suspended.
        case starting
        /// The task sleeps; the timer is armed.
        case sleeping(UnsafeContinuation<Void, any Error>, any DispatchSourceTimer)
        /// The task was cancelled before it suspended.
        case cancelledEarly
        /// The task was resumed.
        case ended
    }

    private let state = AtomicBox(UncheckedSendable(value: State.starting), name: "RetryTimer.sleep")

    /// The task suspends with `continuation`: arms `timer`, or, if the task was cancelled already, resumes it.
    func start(_ continuation: UnsafeContinuation<Void, any Error>, timer: any DispatchSourceTimer) {
        let armed = self.state.mutate { state -> Bool in
            guard case .starting = state.value else {
                state.value = .ended
                return false
            }
            state.value = .sleeping(continuation, timer)
            return true
        }
        guard armed else {
            // Never armed: cancelled first, so that it never fires, then activated, as Dispatch requires of a timer
            // before its release.
            timer.cancel()
            timer.activate()
            continuation.resume(throwing: CancellationError())
            return
        }
        // Armed only once recorded, so that it cannot fire before there is a task to resume.
        timer.activate()
    }

    /// The timer fired, or the task was cancelled: resumes the task once, and lets the timer go.
    func end(cancelled: Bool) {
        let sleeping = self.state.mutate { state -> (UnsafeContinuation<Void, any Error>, any DispatchSourceTimer)? in
            switch state.value {
            case .starting:
                if cancelled { state.value = .cancelledEarly }
                return nil
            case .sleeping(let continuation, let timer):
                state.value = .ended
                return (continuation, timer)
            case .cancelledEarly, .ended:
                return nil
            }
        }
        guard let (continuation, timer) = sleeping else { return }
        timer.cancel()
        if cancelled {
            continuation.resume(throwing: CancellationError())
        } else {
            continuation.resume()
        }
    }
}

/// A value that crosses threads under a lock: a Dispatch timer, which is not `Sendable` on every platform.
private struct UncheckedSendable<Value>: @unchecked Sendable {
    // Safety: read and written only inside the `AtomicBox` that holds it.
    var value: Value
}
