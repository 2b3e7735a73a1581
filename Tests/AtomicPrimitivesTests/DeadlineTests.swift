import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

/// Durations that every conversion must get right: the ends of each range it could trip on.
private let edges: [Duration] = [
    .zero,
    Duration(attoseconds: 1), Duration(attoseconds: -1),
    Duration(attoseconds: 999_999_999), Duration(attoseconds: 1_000_000_000), Duration(attoseconds: 1_999_999_999),
    .nanoseconds(1), .nanoseconds(-1),
    .seconds(Int64.max), .seconds(Int64.min), .seconds(Int64.max) + .nanoseconds(1),
    .nanoseconds(Int64.max), .nanoseconds(Int64.min), .nanoseconds(Int64.max) - .nanoseconds(1),
    .nanoseconds(Int64.max) + .nanoseconds(1), .nanoseconds(Int64.max) - Duration(attoseconds: 1),
    .seconds(1e19), .seconds(-1e19),
    Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999),
    Duration(attoseconds: .max), Duration(attoseconds: .min),
]

/// A span's place on the line of durations: none below every count, unlimited above.
private func rank(_ span: Deadline.Span) -> Int128 {
    switch span {
    case .none: -1
    case .nanoseconds(let count): Int128(count)
    case .unlimited: Int128(Int.max)
    }
}

/// The whole nanoseconds of `duration`, toward zero, computed another way than the conversion: through the
/// components, for durations whose seconds fit an Int64 (where `components` does not trap).
private func nanosecondsByComponents(_ duration: Duration) -> Int128 {
    let (seconds, attoseconds) = duration.components
    return Int128(seconds) * 1_000_000_000 + Int128(attoseconds / 1_000_000_000)
}

@Suite("Deadline: the one conversion of time")
struct DeadlineTests {
    @Test(
        "over the whole Duration range, a span is none below one nanosecond, unlimited from Int.max, whole ns between"
    )
    func spanOverTheWholeRange() {
        var random = PropertyRun.random(0xDEAD_11E)
        var samples = edges
        for _ in 0..<PropertyRun.rounds(20_000) {
            let bits = Int128(bitPattern: UInt128(random.next()) << 64 | UInt128(random.next()))
            // Whole range, then the ranges where the answer changes: within Int64 seconds, within Int64 nanoseconds.
            samples.append(Duration(attoseconds: bits))
            samples.append(Duration(attoseconds: bits >> 35))
            samples.append(Duration(attoseconds: bits >> 65))
        }
        for duration in samples {
            let span = Deadline.Span(duration)
            let attoseconds = duration.attoseconds
            switch span {
            case .none:
                #expect(attoseconds < 1_000_000_000, "\(attoseconds) as")
            case .unlimited:
                #expect(attoseconds / 1_000_000_000 >= Int128(Int.max), "\(attoseconds) as")
            case .nanoseconds(let count):
                #expect(count >= 1 && count < Int.max, "\(attoseconds) as")
                #expect(Int128(count) == nanosecondsByComponents(duration), "\(attoseconds) as")
            }
            let deadline = Deadline(after: duration, from: DispatchTime(uptimeNanoseconds: 1_000))
            switch (span, deadline) {
            case (.none, .now), (.unlimited, .never): break
            case (.nanoseconds(let count), .at(let time)):
                #expect(time.uptimeNanoseconds == 1_000 + UInt64(count), "\(attoseconds) as")
            case (.nanoseconds(let count), .never):
                #expect(count >= Int.max - 1_000, "\(attoseconds) as")
            default:
                Issue.record("\(attoseconds) as: span \(span), deadline \(deadline)")
            }
        }
        // Monotone: a longer duration never gives a shorter span.
        let sorted = samples.sorted()
        for (shorter, longer) in zip(sorted, sorted.dropFirst()) {
            #expect(rank(Deadline.Span(shorter)) <= rank(Deadline.Span(longer)), "\(shorter) then \(longer)")
        }
    }

    @Test("the edges, spelled out")
    func edgesSpelledOut() {
        #expect(Deadline.Span(.zero) == .none)
        #expect(Deadline.Span(Duration(attoseconds: 999_999_999)) == .none)
        #expect(Deadline.Span(.nanoseconds(-1)) == .none)
        #expect(Deadline.Span(Duration(attoseconds: .min)) == .none)
        #expect(Deadline.Span(.nanoseconds(1)) == .nanoseconds(1))
        #expect(Deadline.Span(Duration(attoseconds: 1_999_999_999)) == .nanoseconds(1))
        #expect(Deadline.Span(.nanoseconds(Int64.max) - .nanoseconds(1)) == .nanoseconds(Int.max - 1))
        #expect(Deadline.Span(.nanoseconds(Int64.max)) == .unlimited)
        #expect(Deadline.Span(.seconds(1e19)) == .unlimited)
        #expect(Deadline.Span(Duration(attoseconds: .max)) == .unlimited)
    }

    @Test("seconds follow the same rule: NaN, zero and less are none, infinity is unlimited")
    func seconds() {
        #expect(Deadline.Span(seconds: .nan) == .none)
        #expect(Deadline.Span(seconds: 0) == .none)
        #expect(Deadline.Span(seconds: -1e300) == .none)
        #expect(Deadline.Span(seconds: 0.9e-9) == .none)
        #expect(Deadline.Span(seconds: 1e-9) == .nanoseconds(1))
        #expect(Deadline.Span(seconds: 1.5) == .nanoseconds(1_500_000_000))
        #expect(Deadline.Span(seconds: 9.3e9) == .unlimited)
        #expect(Deadline.Span(seconds: .infinity) == .unlimited)
        #expect(Deadline(afterSeconds: -.infinity) == .now)
        #expect(Deadline(afterSeconds: .infinity) == .never)
    }

    @Test("a DispatchTime: not after the present is now, distantFuture is never, a later one is itself")
    func dispatchTime() {
        let present = DispatchTime(uptimeNanoseconds: 5_000)
        #expect(Deadline(DispatchTime(uptimeNanoseconds: 4_999), present: present) == .now)
        #expect(Deadline(present, present: present) == .now)
        #expect(
            Deadline(DispatchTime(uptimeNanoseconds: 5_001), present: present) == .at(.init(uptimeNanoseconds: 5_001))
        )
        #expect(Deadline(.distantFuture, present: present) == .never)
        #expect(Deadline(.now()) == .now)  // the present has moved on: the clock is read after the caller's
    }

    @Test("a span Dispatch cannot add to the present is never")
    func overflowingUptime() {
        let late = DispatchTime(uptimeNanoseconds: UInt64(Int64.max) - 10)
        #expect(
            Deadline(after: Duration.nanoseconds(5), from: late) == .at(.init(uptimeNanoseconds: UInt64(Int64.max) - 5))
        )
        #expect(Deadline(after: Duration.nanoseconds(10), from: late) == .never)
        #expect(Deadline(after: Duration.nanoseconds(Int64.max - 1), from: late) == .never)
    }

    @Test("a duration in seconds, at any size")
    func inSeconds() {
        #expect(Duration.seconds(1.5).inSeconds == 1.5)
        #expect(Duration.milliseconds(10).inSeconds == 0.01)
        #expect(Duration(attoseconds: .max).inSeconds == Double(Int128.max) / 1e18)
        #expect(Duration(attoseconds: .min).inSeconds < -1.7e20)
    }
}
