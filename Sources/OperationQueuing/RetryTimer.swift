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
        if clock.isMeasuredByDispatch {
            let timer = Self.makeDispatchTimer(after: delay, queue: queue, fire)
            timer.activate()
            self.kind = .dispatch(timer)
        } else {
            self.kind = .task(
                Task.detached {
                    do { try await clock.sleep(for: delay) } catch { return }  // cancelled
                    queue.async(execute: fire)
                }
            )
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
        guard clock.isMeasuredByDispatch else { return try await clock.sleep(for: delay) }
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

    /// A one-shot timer on `queue`, not yet activated, that runs `fire` `delay` from now.
    private static func makeDispatchTimer(
        after delay: Duration,
        queue: DispatchQueue,
        _ fire: @escaping @Sendable () -> Void
    ) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let deadline = delay.nanosecondsIfRepresentable.map { DispatchTime.now() + .nanoseconds($0) } ?? .distantFuture
        timer.schedule(deadline: deadline)
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
