import AtomicPrimitives
import Dispatch

/// One value's watch over its manual-completion commands, for ``ManualCompletionDoctor``: at most one timer at a time.
///
/// A manual-completion command holds the value's turn until `done`, so at most one of a value's commands waits for
/// its `done` at a time. When a closure returns without calling `done`, the command is noted here as pending, and a
/// timer is set for when its patience runs out, unless a timer is set already. When the timer fires, it looks at the
/// command pending then: if it has waited the whole patience, it is reported; if it came later, the timer is set
/// again for its own end of patience; if there is none, or its `done` has come, the watch rests. So a value that runs
/// many such commands, each with a timely `done`, costs one timer per patience, not one per command, and the watch
/// keeps at most one latch.
final class ManualCompletionWatch<Value>: Sendable {
    /// The command that waits for `done`.
    private struct Pending: Sendable {
        let latch: CompletionLatch
        let since: DispatchTime
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
        case setTimer(DispatchTime)
        case report(Pending, Duration)
    }

    private let state = AtomicBox(State())

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
        guard let patience = ManualCompletionDoctor.patience?.nanosecondsIfRepresentable else { return }
        let now = DispatchTime.now()
        let setTimer = self.state.mutate { state -> Bool in
            state.pending = Pending(latch: latch, since: now, schedule: schedule, file: file, line: line)
            guard !state.isTimerSet else { return false }
            state.isTimerSet = true
            return true
        }
        if setTimer { self.setTimer(at: now + .nanoseconds(patience)) }
    }

    private func setTimer(at deadline: DispatchTime) {
        DispatchQueue.global().asyncAfter(deadline: deadline) { self.check() }
    }

    /// The timer's work: reports the pending command if its patience has run out, or sets the timer for when it does.
    private func check() {
        let next = self.state.mutate { state -> Check in
            guard let pending = state.pending, !pending.latch.isDone,
                let patience = ManualCompletionDoctor.patience,
                let nanoseconds = patience.nanosecondsIfRepresentable
            else {
                state.pending = nil
                state.isTimerSet = false
                return .rest
            }
            let due = pending.since + .nanoseconds(nanoseconds)
            guard DispatchTime.now() >= due else { return .setTimer(due) }
            state.pending = nil
            state.isTimerSet = false
            // The time it really waited: more than the patience if the patience was lowered while a check was set.
            return .report(
                pending,
                .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds - pending.since.uptimeNanoseconds))
            )
        }
        switch next {
        case .rest:
            break
        case .setTimer(let deadline):
            self.setTimer(at: deadline)
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
