import Dispatch

/// A span of time as DispatchKit's callers give it — `Double` seconds, Eki's spelling, or a `Duration` — checked and
/// turned into a Dispatch interval by the package's one conversion, `Deadline.Span`.
///
/// Dispatch's own `DispatchTime + Double` traps on huge values ("Double value cannot be converted to Int") and
/// silently never fires on NaN; this names the mistake instead. The two spellings follow one rule: a span too long to
/// represent in nanoseconds (about 292 years or more; for seconds, `infinity` too; for a duration, up to the largest)
/// means never, a negative one (or NaN) traps, and a repeat interval must come to at least one nanosecond.
enum TimeSpan {
    /// A number of seconds.
    case seconds(Double)
    /// A duration.
    case duration(Duration)

    /// The span as a Dispatch interval, or `nil` when it is too long to represent: callers treat that as "never".
    ///
    /// - Parameter name: What the value is, for the message: `"GCDTimer: interval"`.
    /// - Returns: The interval, or `nil` for never.
    /// - Precondition: The span is 0 or more; seconds are a number (not NaN).
    func interval(_ name: @autoclosure () -> String) -> DispatchTimeInterval? {
        self.checked(name()).interval
    }

    /// Checks the span as a repeat interval: at least one nanosecond, Dispatch's unit, once converted (what is finer
    /// than a nanosecond is dropped).
    ///
    /// - Precondition: The span comes to at least one nanosecond (seconds not NaN): less is 0 to Dispatch, which would
    ///   fire without pause.
    func checkRepeat(_ name: @autoclosure () -> String) {
        switch self {
        case .seconds(let seconds):
            guarantee(
                !seconds.isNaN && Deadline.Span(seconds: seconds) != .none,
                "\(name()) must be a number of seconds of at least one nanosecond (1e-9); got \(seconds)"
            )
        case .duration(let duration):
            guarantee(
                Deadline.Span(duration) != .none,
                "\(name()) must be a duration of at least one nanosecond; got \(duration)"
            )
        }
    }

    /// The span converted, after the check that it is a number, 0 or more.
    private func checked(_ name: @autoclosure () -> String) -> Deadline.Span {
        switch self {
        case .seconds(let seconds):
            guarantee(
                !seconds.isNaN && seconds >= 0,
                "\(name()) must be a number of seconds, 0 or more; got \(seconds)"
            )
            return Deadline.Span(seconds: seconds)
        case .duration(let duration):
            guarantee(duration >= .zero, "\(name()) must be a duration of 0 or more; got \(duration)")
            return Deadline.Span(duration)
        }
    }

    /// The span in seconds: exact for seconds, the nearest `Double` (within a rounding) for a duration.
    var inSeconds: Double {
        switch self {
        case .seconds(let seconds):
            return seconds
        case .duration(let duration):
            return duration.inSeconds
        }
    }

    /// The span as a duration: exact for a duration, the nearest one for seconds; seconds beyond what a `Duration`
    /// holds (`infinity` included) give the longest one.
    var asDuration: Duration {
        switch self {
        case .seconds(let seconds):
            guard seconds < Double(Int64.max) else { return Duration(secondsComponent: .max, attosecondsComponent: 0) }
            return .seconds(seconds)
        case .duration(let duration):
            return duration
        }
    }
}
