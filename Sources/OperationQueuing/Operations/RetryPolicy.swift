import AtomicPrimitives
import Foundation

/// How long a ``ConcurrentOperation`` waits before its next automatic attempt: at once, after a constant delay, or
/// after a delay that grows with each failure.
///
/// ```swift
/// import OperationQueuing
///
/// let sync = ConcurrentOperation { operation in operation.success = pushChanges() }  // here: fails once
/// sync.maximumRetries = 5
/// sync.retryPolicy = .exponential(initial: .milliseconds(100), maximum: .seconds(5), jitter: 0.2)
/// queuer.addOperation(sync)
/// sync.waitUntilFinished()
/// print(sync.currentAttempt, sync.success)  // 2 true
/// ```
///
/// The delay never blocks a thread: it passes on the operation's ``ConcurrentOperation/retryClock``, and the next
/// attempt is scheduled on a global queue when it has. An operation cancelled during the delay finishes at once, and
/// the delay's timer goes with it. The policy applies to automatic retries only; with
/// ``ConcurrentOperation/manualRetry``, ``ConcurrentOperation/retry()`` decides when. ``Queuer/run(retrying:clock:_:)``
/// spaces its attempts with a policy too, given in its ``RetryConfiguration``.
public struct RetryPolicy: Sendable, Hashable {
    private enum Shape: Sendable, Hashable {
        case immediate
        case constant(Duration)
        case exponential(initial: Duration, multiplier: Double, maximum: Duration, jitter: Double)
    }

    private let shape: Shape

    /// The next attempt starts as soon as the failed one has ended: Queuer's behaviour, and the default.
    public static let immediate = RetryPolicy(shape: .immediate)

    /// The next attempt starts `delay` after the failed one has ended.
    ///
    /// - Parameter delay: The wait before each retry; zero or more.
    /// - Returns: The policy.
    /// - Precondition: `delay` is not negative.
    public static func constant(_ delay: Duration) -> RetryPolicy {
        guarantee(delay >= .zero, "RetryPolicy.constant: delay must be zero or more, got \(delay)")
        return RetryPolicy(shape: .constant(delay))
    }

    /// The wait before retry `n` is `initial × multiplier^(n − 1)`, at most `maximum`, less a random part of up to
    /// `jitter` of it.
    ///
    /// With the defaults, a first retry waits `initial`, the second twice that, then four times, up to `maximum`.
    /// Jitter spreads the retries of many clients that failed at once: with `jitter: 0.2`, each wait is between 80%
    /// and 100% of its computed value.
    ///
    /// - Parameters:
    ///   - initial: The wait before the first retry; zero or more.
    ///   - multiplier: The growth from one wait to the next; finite and 1 or more.
    ///   - maximum: The longest wait; at least `initial`.
    ///   - jitter: The largest share of a wait taken off at random, from 0 (none, the default) to 1.
    /// - Returns: The policy.
    /// - Precondition: The parameters are in the ranges above; each violation names the parameter.
    public static func exponential(
        initial: Duration,
        multiplier: Double = 2,
        maximum: Duration,
        jitter: Double = 0
    ) -> RetryPolicy {
        guarantee(initial >= .zero, "RetryPolicy.exponential: initial must be zero or more, got \(initial)")
        guarantee(
            multiplier.isFinite && multiplier >= 1,
            "RetryPolicy.exponential: multiplier must be finite and 1 or more, got \(multiplier)"
        )
        guarantee(
            maximum >= initial,
            "RetryPolicy.exponential: maximum must be at least initial (\(initial)), got \(maximum)"
        )
        guarantee(
            (0...1).contains(jitter),
            "RetryPolicy.exponential: jitter must be from 0 to 1, got \(jitter)"
        )
        let shape = Shape.exponential(initial: initial, multiplier: multiplier, maximum: maximum, jitter: jitter)
        return RetryPolicy(shape: shape)
    }

    /// The wait before retry number `retry`, counted from 1 (the second attempt); random within the jitter, or
    /// fixed by `jitterSeed`.
    ///
    /// With a seed, the jitter of retry `n` depends on the seed and `n` only: the same seed gives the same waits, in
    /// every run and on every platform, so that a test can compute the wait it expects. Without one, the jitter comes
    /// from the system's random source.
    ///
    /// ```swift
    /// import OperationQueuing
    ///
    /// let policy = RetryPolicy.exponential(initial: .seconds(1), maximum: .seconds(8), jitter: 0.5)
    /// let first = (1...3).map { policy.delay(beforeRetry: $0, jitterSeed: 7) }
    /// let second = (1...3).map { policy.delay(beforeRetry: $0, jitterSeed: 7) }
    /// print(first == second)  // true
    /// ```
    ///
    /// - Parameters:
    ///   - retry: Which retry: 1 for the second attempt, 2 for the third, and so on.
    ///   - jitterSeed: The seed of the jitter's random numbers, or `nil` (the default) for the system's.
    /// - Returns: Zero for ``immediate``.
    public func delay(beforeRetry retry: Int, jitterSeed: UInt64? = nil) -> Duration {
        switch self.shape {
        case .immediate:
            return .zero
        case .constant(let delay):
            return delay
        case .exponential(let initial, let multiplier, let maximum, let jitter):
            // The growth saturates at the largest finite Double rather than overflowing to infinity, so that
            // initial × growth is never 0 × ∞ (NaN): a zero initial wait stays zero at every retry, and any other
            // reaches the cap and stays there.
            let growth = min(pow(multiplier, Double(max(0, retry - 1))), .greatestFiniteMagnitude)
            let uncapped = initial.inSeconds * growth
            let share = 1 - jitter * Self.unitRandom(retry: retry, seed: jitterSeed)
            // At the cap the wait is `maximum` itself, not its rounding through a Double.
            if uncapped >= maximum.inSeconds, share == 1 { return maximum }
            let nanoseconds = min(uncapped, maximum.inSeconds) * share * 1e9
            // A Double can round a few nanoseconds past an odd cap: the cap bounds the result too.
            return nanoseconds < 9e18 ? min(.nanoseconds(Int64(nanoseconds)), maximum) : maximum
        }
    }

    /// A random number from 0 to 1: the system's, or, with a seed, one fixed by the seed and the retry alone (a
    /// SplitMix64 step of the two, so that neighbouring seeds and retries give unrelated numbers).
    private static func unitRandom(retry: Int, seed: UInt64?) -> Double {
        guard let seed else { return Double.random(in: 0...1) }
        var random = SplitMix64(seed: seed ^ (UInt64(truncatingIfNeeded: retry) &* 0xD1B5_4A32_D192_ED03))
        return Double(random.next() >> 11) * 0x1p-53  // the top 53 bits: every Double from 0 up to 1 − 2⁻⁵³
    }
}
