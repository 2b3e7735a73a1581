import Dispatch

/// Seconds as DispatchKit's callers give them, checked and turned into Dispatch intervals.
///
/// Dispatch's own `DispatchTime + Double` traps on huge values ("Double value cannot be converted to Int") and
/// silently never fires on NaN; this names the mistake instead.
enum Seconds {
    /// `seconds` as a Dispatch interval, or `nil` when it is too long to represent (about 292 years or more,
    /// infinity included): callers treat that as "never".
    ///
    /// - Parameters:
    ///   - seconds: A number of seconds.
    ///   - name: What the value is, for the message: `"GCDTimer: interval"`.
    /// - Returns: The interval, or `nil` for never.
    /// - Precondition: `seconds` is a number, 0 or more.
    static func interval(_ seconds: Double, _ name: @autoclosure () -> String) -> DispatchTimeInterval? {
        precondition(!seconds.isNaN && seconds >= 0, "\(name()) must be a number of seconds, 0 or more; got \(seconds)")
        let nanoseconds = seconds * 1_000_000_000
        guard nanoseconds < Double(Int.max) else { return nil }
        return .nanoseconds(Int(nanoseconds))
    }

    /// Checks `seconds` as a repeat interval: a number greater than 0.
    ///
    /// - Precondition: `seconds` is a number greater than 0; 0 would fire without pause.
    static func checkRepeat(_ seconds: Double, _ name: @autoclosure () -> String) {
        precondition(
            !seconds.isNaN && seconds > 0,
            "\(name()) must be a number of seconds greater than 0; got \(seconds)"
        )
    }
}
