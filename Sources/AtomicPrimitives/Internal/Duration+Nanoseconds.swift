extension Duration {
    /// The duration in whole nanoseconds, or `nil` if that does not fit an `Int`: about 292 years or more, of
    /// either sign.
    ///
    /// Whatever is finer than a nanosecond is dropped, toward zero: 1.9 ns gives 1, -1.9 ns gives -1, and a duration
    /// shorter than a nanosecond gives 0. Negative durations give negative counts. Callers that turn a duration into
    /// a Dispatch deadline read `nil` as "never": no time that long can pass.
    ///
    /// The one conversion of the package, for every module: write no other.
    package var nanosecondsIfRepresentable: Int? {
        let (seconds, attoseconds) = self.components
        // Both components have the duration's sign, and each division below truncates toward zero.
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        let (total, sumOverflow) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return sumOverflow ? nil : Int(exactly: total)
    }
}
