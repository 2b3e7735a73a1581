import OperationQueuing
import TestSupport
import Testing

/// RetryPolicy: every wait lies between zero and the policy's maximum, grows with the retry number without jitter,
/// and stays zero from a zero initial wait, for every retry number up to the largest.
///
/// Random exponential policies (zero or positive initial waits, multipliers from 1 to 10, jitter or none) are asked
/// for the wait before random retry numbers, small and huge, in random order.
@Suite("Contract properties: retry policy waits", .timeLimit(propertyTimeLimit))
struct RetryPolicyPropertyTests {
    @Test("an exponential policy's waits are in [0, maximum], grow with the retry number, and stay 0 from 0")
    func exponentialWaitsAreBounded() {
        var random = PropertyRun.random(71)
        for round in 0..<PropertyRun.rounds(200) {
            let initial: Duration =
                random.chance(30) ? .zero : .nanoseconds(Int64.random(in: 1...5_000_000_000, using: &random))
            let maximum = initial + .nanoseconds(Int64.random(in: 0...60_000_000_000, using: &random))
            let multiplier = Double.random(in: 1...10, using: &random)
            let jitter = random.chance(30) ? Double.random(in: 0...1, using: &random) : 0
            let policy = RetryPolicy.exponential(
                initial: initial,
                multiplier: multiplier,
                maximum: maximum,
                jitter: jitter
            )
            let shape = "initial \(initial), multiplier \(multiplier), maximum \(maximum), jitter \(jitter)"
            var retries = (0..<40).map { _ in Int.random(in: 1...64, using: &random) }
            retries += (0..<40).map { _ in Int.random(in: 65...Int.max / 2, using: &random) }
            retries.sort()
            var previous = Duration.zero
            for retry in retries {
                let wait = policy.delay(beforeRetry: retry)
                let bounded = wait >= .zero && wait <= maximum
                let boundRule = PropertyRun.failure("a wait lies in [0, maximum]", round: round)
                #expect(bounded, "\(boundRule): \(wait) before retry \(retry); \(shape)")
                if initial == .zero {
                    let zeroRule = PropertyRun.failure("a zero initial wait stays zero", round: round)
                    #expect(wait == .zero, "\(zeroRule): \(wait) before retry \(retry); \(shape)")
                    if wait != .zero { return }
                }
                if jitter == 0 {
                    let growthRule = PropertyRun.failure("without jitter, waits never shrink", round: round)
                    #expect(
                        wait >= previous,
                        "\(growthRule): \(previous), then \(wait) before retry \(retry); \(shape)"
                    )
                    previous = wait
                }
                if !bounded { return }
            }
        }
    }
}
