import Dispatch

/// Warns when a manual-completion command still holds its value long after its closure returned, because its `done`
/// has not been called.
///
/// A `get(manualCompletion:)` or `set(manualCompletion:)` command holds the value until its closure has returned
/// and its `done` has been called. A `done` forgotten on one path of the closure (an early `return`, an error, a
/// cancelled request) holds the value forever: every later command of that value waits, and a `wait` command's
/// caller stays blocked. Nothing fails, and nothing says why. So when a closure returns without calling `done`, the
/// doctor looks again after ``patience``; if `done` has still not been called, it prints one warning to standard
/// error that names the value's type, the schedule and the site that issued the command, and the fix. Each command
/// is warned about at most once; `done` called later still ends it.
///
/// A closure that calls `done` before it returns costs the doctor nothing. One that returns first, as a command
/// whose work ends on another thread does, costs two lock operations; a value whose commands do that has at most one
/// timer on a global queue set at a time, so a busy value costs one timer per patience, not one per command.
///
/// ```swift
/// import SafeValueCore
///
/// ManualCompletionDoctor.patience = .seconds(60)  // a command that holds its value through a long request
/// ManualCompletionDoctor.patience = nil           // off
/// print(ManualCompletionDoctor.patience == nil)   // true
/// ```
///
/// It is on in every build, on every platform, as `MainQueueDoctor` is on Linux: a forgotten `done` hangs a
/// release build as surely as a debug one.
public enum ManualCompletionDoctor {
    private static let patienceStorage = AtomicBox<Duration?>(.seconds(10))

    /// How long after its closure returned a manual-completion command may still wait for `done` before the warning;
    /// `nil` switches the doctor off.
    ///
    /// Ten seconds unless you say otherwise. A new value applies to commands whose closure returns afterwards; a check
    /// that is already set keeps its time, so lowering the patience can make the next warning come later than the new
    /// patience. The warning states how long the command really waited.
    /// - Precondition: A new value is `nil` or more than zero.
    public static var patience: Duration? {
        get { self.patienceStorage.value }
        set {
            if let newValue {
                guarantee(
                    newValue > .zero,
                    "ManualCompletionDoctor.patience must be nil or more than zero, got \(newValue)"
                )
            }
            self.patienceStorage.mutate { $0 = newValue }
        }
    }

    /// Reports a manual-completion command whose `done` is overdue: to a test that captures it, or else to standard
    /// error.
    ///
    /// - Parameters:
    ///   - value: The type of the value the command holds.
    ///   - schedule: The schedule the command was issued on.
    ///   - file: The file that issued the command.
    ///   - line: The line that issued the command.
    ///   - patience: How long the command has waited for `done` since its closure returned.
    static func report(
        value: Any.Type,
        schedule: StaticString,
        file: StaticString,
        line: UInt,
        after patience: Duration
    ) {
        let site = line == 0 ? "\(file)" : "\(file):\(line)"
        DiagnosticReport(
            kind: .manualCompletionOverdue,
            resources: ["QueueSafeValue<\(value)>"],
            sites: [site],
            message: self.warning(value: value, schedule: schedule, site: site, after: patience)
        ).warn()
    }

    /// The warning, naming the command, the rule and the fixes.
    static func warning(value: Any.Type, schedule: StaticString, site: String, after patience: Duration) -> String {
        "ConcurrencyKit: a manual-completion command of a QueueSafeValue<\(value)>, issued on its \(schedule) "
            + "schedule at \(site), still holds the value \(patience) after its closure returned: done() has not been "
            + "called, and every later command of this value waits for it. Call done() once on every path of the "
            + "closure, also on errors and cancellation. If the work takes this long on purpose, raise "
            + "ManualCompletionDoctor.patience, or set it to nil to silence this warning."
    }
}
