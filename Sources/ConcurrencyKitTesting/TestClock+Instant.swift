extension TestClock {
    /// An instant of a ``TestClock``: a duration from its origin.
    ///
    /// A new clock starts at offset zero unless told otherwise, so in a test `clock.now.offset` reads as the time
    /// that has passed: `#expect(clock.now.offset == .seconds(7))`. Instants print as their offset, `7.0 seconds`.
    public struct Instant: InstantProtocol, CustomStringConvertible {
        /// How far the instant lies from the clock's origin.
        public let offset: Duration

        /// Creates the instant `offset` from the origin.
        ///
        /// - Parameter offset: The distance from the origin; the default is the origin itself.
        public init(offset: Duration = .zero) {
            self.offset = offset
        }

        /// The instant `duration` later, or earlier if `duration` is negative.
        ///
        /// - Parameter duration: How far to move.
        /// - Returns: The moved instant.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: self.offset + duration)
        }

        /// The duration from this instant to `other`: negative if `other` comes first.
        ///
        /// - Parameter other: The later instant.
        /// - Returns: `other.offset - offset`.
        public func duration(to other: Instant) -> Duration {
            other.offset - self.offset
        }

        /// Whether `lhs` comes before `rhs`.
        ///
        /// - Parameters:
        ///   - lhs: An instant.
        ///   - rhs: Another instant.
        /// - Returns: `true` if `lhs.offset < rhs.offset`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        /// The offset in seconds, exact to the attosecond, such as `7.0 seconds` or `3605.000000001 seconds`.
        ///
        /// Unlike `Duration`'s own description, which goes through a `Double`, it never rounds: a test that compares
        /// printed instants compares the instants.
        public var description: String {
            // `Duration.components` traps beyond Int64 seconds; the 128-bit attoseconds hold every offset.
            let total = self.offset.attoseconds
            let sign = total < 0 ? "-" : ""
            let (seconds, attoseconds) = total.magnitude.quotientAndRemainder(dividingBy: 1_000_000_000_000_000_000)
            var fraction = String(attoseconds)
            fraction = String(repeating: "0", count: 18 - fraction.count) + fraction
            while fraction.count > 1 && fraction.hasSuffix("0") { fraction.removeLast() }
            return "\(sign)\(seconds).\(fraction) seconds"
        }
    }
}
