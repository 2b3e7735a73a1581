import Dispatch

/// When a timed call gives up, or a delayed one runs: now, at an instant of Dispatch's uptime clock, or never.
///
/// The one conversion of time in the package: every timed API turns its `Duration`, `Double` seconds or
/// `DispatchTime` into a `Deadline` (or, for an interval that starts later, a ``Span``), and none traps, whatever the
/// value. The rules, for every spelling:
/// - Zero or less, or less than a nanosecond (Dispatch's unit), is ``now``: a wait only takes what is free, a delay
///   is due at once. A `DispatchTime` that is not after the present is ``now`` too.
/// - A span of `Int.max` nanoseconds or more (about 292 years; `infinity` seconds, and every `Duration` up to the
///   largest) is ``never``: a wait has no limit, a delay never comes. So is a deadline that Dispatch cannot count
///   (`DispatchTime.distantFuture`, or a present plus a span past `Int64.max` nanoseconds of uptime).
/// - Everything else is whole nanoseconds, finer parts dropped.
package enum Deadline: Equatable, Sendable {
    /// Already due: a wait only looks.
    case now
    /// A later instant of Dispatch's uptime clock.
    case at(DispatchTime)
    /// Never: no limit.
    case never

    /// A span of time in Dispatch's terms, before it is anchored to a start: none, whole nanoseconds, or unlimited.
    package enum Span: Hashable, Sendable {
        /// Zero or less, or less than a nanosecond.
        case none
        /// From 1 to `Int.max - 1` nanoseconds.
        case nanoseconds(Int)
        /// `Int.max` nanoseconds or more: never.
        case unlimited

        /// The span of `duration`; never traps (it reads the 128-bit `Duration.attoseconds`).
        package init(_ duration: Duration) {
            let nanoseconds = duration.attoseconds / 1_000_000_000
            if nanoseconds < 1 {
                self = .none
            } else if nanoseconds >= Int128(Int.max) {
                self = .unlimited
            } else {
                self = .nanoseconds(Int(nanoseconds))
            }
        }

        /// The span of `seconds`, by the same rules.
        ///
        /// `infinity` is unlimited. NaN is `none`: callers that must not take it check first.
        package init(seconds: Double) {
            let nanoseconds = seconds * 1_000_000_000
            if !(nanoseconds >= 1) {
                self = .none
            } else if nanoseconds >= Double(Int.max) {
                self = .unlimited
            } else {
                self = .nanoseconds(Int(nanoseconds))
            }
        }

        /// The span as a Dispatch interval: 0 for none, `nil` for unlimited (never).
        package var interval: DispatchTimeInterval? {
            switch self {
            case .none: .nanoseconds(0)
            case .nanoseconds(let count): .nanoseconds(count)
            case .unlimited: nil
            }
        }
    }

    /// The deadline `span` after `start`.
    ///
    /// - Parameters:
    ///   - span: How long after `start`.
    ///   - start: The instant the span is measured from; the present unless you say otherwise.
    package init(after span: Span, from start: DispatchTime = .now()) {
        switch span {
        case .none:
            self = .now
        case .unlimited:
            self = .never
        case .nanoseconds(let count):
            // Dispatch counts uptime in a signed 64-bit number of nanoseconds: beyond it is never.
            let (end, overflow) = start.uptimeNanoseconds.addingReportingOverflow(UInt64(count))
            self = overflow || end >= UInt64(Int64.max) ? .never : .at(DispatchTime(uptimeNanoseconds: end))
        }
    }

    /// The deadline `delay` from now (or from `start`).
    ///
    /// - Parameters:
    ///   - delay: Any duration at all.
    ///   - start: The instant the delay is measured from; the present unless you say otherwise.
    package init(after delay: Duration, from start: DispatchTime = .now()) {
        self.init(after: Span(delay), from: start)
    }

    /// The deadline `seconds` from now (or from `start`).
    ///
    /// - Parameters:
    ///   - seconds: A number of seconds; NaN is now.
    ///   - start: The instant the delay is measured from; the present unless you say otherwise.
    package init(afterSeconds seconds: Double, from start: DispatchTime = .now()) {
        self.init(after: Span(seconds: seconds), from: start)
    }

    /// The deadline `time`: now if it is not after `present`, never for `.distantFuture`.
    ///
    /// - Parameters:
    ///   - time: A caller's deadline.
    ///   - present: The present; read from the clock unless you say otherwise.
    package init(_ time: DispatchTime, present: DispatchTime = .now()) {
        if time.uptimeNanoseconds >= UInt64(Int64.max) {
            self = .never
        } else if time.uptimeNanoseconds <= present.uptimeNanoseconds {
            self = .now
        } else {
            self = .at(time)
        }
    }

    /// The deadline as Dispatch takes it: `.now()` for now, `.distantFuture` for never.
    package var dispatchTime: DispatchTime {
        switch self {
        case .now: .now()
        case .at(let time): time
        case .never: .distantFuture
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double` (within a rounding of the nearest); never traps.
    package var inSeconds: Double {
        Double(self.attoseconds) / 1e18
    }
}
