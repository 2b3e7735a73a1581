import AtomicPrimitives

/// One value's watch over its manual-completion commands, for ``ManualCompletionDoctor``: at most one timer at a time.
///
/// A manual-completion command holds the value's turn until `done`, so at most one of a value's commands waits for
/// its `done` at a time. When a closure returns without calling `done`, the command is noted here as pending, and a
/// timer is set for when its patience runs out, unless a timer is set already. When the timer fires, it looks at the
/// command pending then: if it has waited the whole patience, it is reported; if it came later, the timer is set
/// again for its own end of patience; if there is none, or its `done` has come, the watch rests. So a value that runs
/// many such commands, each with a timely `done`, costs one timer per patience, not one per command, and the watch
/// keeps at most one latch.
///
/// Its time is the value's clock: the continuous clock, whose timers are Dispatch timers on a global queue, or a
/// test's clock, given by the package's `QueueSafeValue(value:completionWatchClock:)`, which the test moves itself.
final class ManualCompletionWatch<Value>: Sendable {
    /// The command that waits for `done`.
    private struct Pending: Sendable {
        let latch: CompletionLatch
        /// When the closure returned, as the time since the watch was made.
        let since: Duration
        let schedule: StaticString
        let file: StaticString
        let line: UInt
    }

    private struct State: Sendable {
        var pending: Pending?
        var isTimerSet = false
    }

    private enum Check {
        case rest
        case setTimer(Duration)
        case report(Pending, Duration)
    }

    private let state = AtomicBox(State())
    /// The time on the watch's clock since the watch was made.
    private let elapsed: @Sendable () -> Duration
    /// Runs a check after a delay on the watch's clock.
    private let runAfter: @Sendable (Duration, @escaping @Sendable () -> Void) -> Void

    /// Creates a watch whose patience runs on `clock`.
    ///
    /// - Parameter clock: The continuous clock, or a test's clock.
    init(clock: some Clock<Duration> = ContinuousClock()) {
        let origin = clock.now
        self.elapsed = { origin.duration(to: clock.now) }
        self.runAfter = { clock.runAfter($0, $1) }
    }

    /// Notes a command whose closure returned without calling `done`: `latch` tells when `done` comes.
    ///
    /// Call it before the closure's return is counted in the latch: that may end the command, and the next command
    /// of the value must not be noted before this one.
    ///
    /// - Parameters:
    ///   - latch: The command's latch.
    ///   - schedule: The schedule the command was issued on.
    ///   - file: The file that issued the command.
    ///   - line: The line that issued the command.
    func watch(_ latch: CompletionLatch, schedule: StaticString, file: StaticString, line: UInt) {
        // A patience too long for a Dispatch deadline never runs out: no watch.
        guard let patience = ManualCompletionDoctor.patience, Deadline.Span(patience) != .unlimited else {
            return
        }
        let now = self.elapsed()
        let setTimer = self.state.mutate { state -> Bool in
            state.pending = Pending(latch: latch, since: now, schedule: schedule, file: file, line: line)
            guard !state.isTimerSet else { return false }
            state.isTimerSet = true
            return true
        }
        if setTimer { self.setTimer(after: patience) }
    }

    private func setTimer(after delay: Duration) {
        self.runAfter(delay) { self.check() }
    }

    /// The timer's work: reports the pending command if its patience has run out, or sets the timer for when it does.
    private func check() {
        let next = self.state.mutate { state -> Check in
            guard let pending = state.pending, !pending.latch.isDone,
                let patience = ManualCompletionDoctor.patience,
                Deadline.Span(patience) != .unlimited
            else {
                state.pending = nil
                state.isTimerSet = false
                return .rest
            }
            let now = self.elapsed()
            let due = pending.since + patience
            guard now >= due else { return .setTimer(due - now) }
            state.pending = nil
            state.isTimerSet = false
            // The time it really waited: more than the patience if the patience was lowered while a check was set.
            return .report(pending, now - pending.since)
        }
        switch next {
        case .rest:
            break
        case .setTimer(let delay):
            self.setTimer(after: delay)
        case .report(let pending, let waited):
            ManualCompletionDoctor.report(
                value: Value.self,
                schedule: pending.schedule,
                file: pending.file,
                line: pending.line,
                after: waited
            )
        }
    }
}
