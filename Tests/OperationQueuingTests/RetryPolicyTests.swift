import ConcurrencyKitTesting
import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

@Suite("RetryPolicy", .timeLimit(.minutes(1)))
struct RetryPolicyTests {
    @Test("immediate waits zero, constant waits its delay before every retry")
    func immediateAndConstant() {
        for retry in [1, 2, 100, Int.max] {
            #expect(RetryPolicy.immediate.delay(beforeRetry: retry) == .zero)
            #expect(RetryPolicy.constant(.milliseconds(250)).delay(beforeRetry: retry) == .milliseconds(250))
        }
    }

    @Test("exponential doubles from initial up to the cap, and stays there for any number of retries")
    func exponentialGrowsToTheCap() {
        let policy = RetryPolicy.exponential(initial: .milliseconds(100), maximum: .seconds(1))
        let delays = (1...6).map { policy.delay(beforeRetry: $0) }
        #expect(delays == [100, 200, 400, 800, 1000, 1000].map { Duration.milliseconds($0) })
        #expect(policy.delay(beforeRetry: Int.max) == .seconds(1))
        let tripling = RetryPolicy.exponential(initial: .seconds(1), multiplier: 3, maximum: .seconds(100))
        #expect((1...4).map { tripling.delay(beforeRetry: $0) } == [1, 3, 9, 27].map { Duration.seconds($0) })
        let huge = RetryPolicy.exponential(initial: .seconds(1), maximum: .seconds(Int64.max))
        #expect(huge.delay(beforeRetry: 10_000) == .seconds(Int64.max), "a cap too large for nanoseconds is kept")
    }

    @Test("a zero initial wait stays zero at every retry, also where the growth overflows a Double")
    func zeroInitialStaysZero() {
        let policy = RetryPolicy.exponential(initial: .zero, maximum: .seconds(5))
        for retry in [1, 2, 1_024, 1_025, 1_026, 100_000, Int.max - 1, Int.max] {
            #expect(policy.delay(beforeRetry: retry) == .zero, "retry \(retry)")
        }
    }

    @Test(
        "exponential stays within zero and its cap for any retry, grows monotonically, and is zero from zero",
        arguments: [0.0, 0.5, 1.0]
    )
    func exponentialSaturates(jitter: Double) {
        let initials: [Duration] = [
            .zero, .nanoseconds(1), .milliseconds(100), .seconds(3), .seconds(Int64.max / 4), .seconds(Int64.max),
        ]
        let maxima: [Duration] = [
            .seconds(5), .nanoseconds(123_456_789_012_345_677), .seconds(1) + .nanoseconds(1), .seconds(Int64.max),
        ]
        let multipliers = [1, 1.000_000_1, 2, 10, 1e300]
        // Every retry up to 2,100 (past 2^1,024), then ever larger ones up to Int.max, in ascending order.
        var retries = Array(1...2_100)
        for shift in 12..<63 {
            let power = 1 << shift
            retries += [power - 1, power, power + 1]
        }
        retries += [Int.max - 1, Int.max]
        for maximum in maxima {
            for initial in initials where initial <= maximum {
                for multiplier in multipliers {
                    let policy = RetryPolicy.exponential(
                        initial: initial,
                        multiplier: multiplier,
                        maximum: maximum,
                        jitter: jitter
                    )
                    let label = "initial \(initial), multiplier \(multiplier), maximum \(maximum), jitter \(jitter)"
                    let delays = retries.map { policy.delay(beforeRetry: $0) }
                    let outside = zip(retries, delays).first { $0.1 < .zero || $0.1 > maximum }
                    #expect(outside == nil, "\(label): retry \(outside?.0 ?? 0) waits \(outside?.1 ?? .zero)")
                    if initial == .zero {
                        #expect(delays.allSatisfy { $0 == .zero }, "\(label)")
                    }
                    guard jitter == 0 else { continue }
                    let drop = zip(retries, zip(delays, delays.dropFirst())).first { $0.1.1 < $0.1.0 }
                    #expect(drop == nil, "\(label): the wait shrinks after retry \(drop?.0 ?? 0)")
                    if initial > .zero, multiplier > 1 {
                        #expect(delays.last == maximum, "\(label): a late retry waits the cap")
                    }
                }
            }
        }
    }

    @Test("jitter takes off at most its share of each wait, and does take something off")
    func jitterStaysInItsBand() {
        let policy = RetryPolicy.exponential(initial: .seconds(1), maximum: .seconds(1), jitter: 0.2)
        let delays = (0..<1_000).map { _ in policy.delay(beforeRetry: 3) }
        #expect(delays.allSatisfy { $0 >= .milliseconds(800) && $0 <= .seconds(1) })
        #expect(Set(delays).count > 100, "the waits are spread, not all the same")
    }

    @Test("bad numbers trap with a message that names RetryPolicy and the parameter", arguments: 0..<6)
    func badNumbersTrap(index: Int) async {
        let expected = [
            "RetryPolicy.constant: delay", "RetryPolicy.exponential: initial", "RetryPolicy.exponential: multiplier",
            "RetryPolicy.exponential: multiplier", "RetryPolicy.exponential: maximum",
            "RetryPolicy.exponential: jitter",
        ][index]
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [index] in
            switch index {
            case 0: _ = RetryPolicy.constant(.milliseconds(-1))
            case 1: _ = RetryPolicy.exponential(initial: .seconds(-1), maximum: .seconds(1))
            case 2: _ = RetryPolicy.exponential(initial: .seconds(1), multiplier: .nan, maximum: .seconds(1))
            case 3: _ = RetryPolicy.exponential(initial: .seconds(1), multiplier: 0.5, maximum: .seconds(1))
            case 4: _ = RetryPolicy.exponential(initial: .seconds(2), maximum: .seconds(1))
            default: _ = RetryPolicy.exponential(initial: .seconds(1), maximum: .seconds(1), jitter: 1.5)
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains(expected))
    }

    @Test("an operation waits exactly the policy's delay between attempts, and counts attempts as they start")
    func operationWaitsBetweenAttempts() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.retrypolicy")
        let starts = AtomicBox<[Duration]>([])
        let operation = ConcurrentOperation { operation in
            starts.mutate { $0.append(clock.now.offset) }
            operation.success = operation.currentAttempt == 3
        }
        operation.retryPolicy = .exponential(initial: .milliseconds(20), maximum: .milliseconds(40))
        operation.retryClock = clock
        queuer.addOperation(operation)
        for delay in [20, 40] {
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            clock.advance(by: .milliseconds(delay))
        }
        #expect(await completes { await queuer.waitForAll() })
        #expect(starts.value == [.zero, .milliseconds(20), .milliseconds(60)])
        #expect(operation.success)
        #expect(operation.currentAttempt == 3)
    }

    @Test("with a jitter seed, the delay of each retry is fixed by the seed and the retry alone")
    func seededJitter() {
        let policy = RetryPolicy.exponential(initial: .seconds(1), maximum: .seconds(1), jitter: 0.5)
        let seeded = (1...200).map { policy.delay(beforeRetry: $0, jitterSeed: 11) }
        #expect((1...200).map { policy.delay(beforeRetry: $0, jitterSeed: 11) } == seeded, "the same every time")
        #expect(seeded.allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(1) }, "within the jitter's band")
        #expect(Set(seeded).count > 150, "spread over the band, not one value")
        #expect((1...200).map { policy.delay(beforeRetry: $0, jitterSeed: 12) } != seeded, "another seed, others")
        #expect(RetryPolicy.constant(.seconds(2)).delay(beforeRetry: 3, jitterSeed: 1) == .seconds(2))
    }

    @Test("cancelling an operation that waits out a long retry delay finishes it at once, without another attempt")
    func cancelDuringDelay() async throws {
        try await offPoolTest { checks in
            for _ in 0..<20 {
                let queuer = Queuer(name: "test.canceldelay")
                let attempts = AtomicBox(0)
                let failed = DispatchSemaphore(value: 0)
                let done = DispatchSemaphore(value: 0)
                let operation = ConcurrentOperation { operation in
                    attempts.mutate { $0 += 1 }
                    operation.success = false
                    failed.signal()
                }
                operation.retryPolicy = .constant(.seconds(3600))
                operation.completionBlock = { done.signal() }
                queuer.addOperation(operation)
                checks.expect(failed.wait(timeout: deadline()) == .success)
                checks.expect(operation.isWaitingForRetry == false, "a delay is not a wait for retry()")
                operation.cancel()
                checks.expect(done.wait(timeout: deadline()) == .success, "finished long before the delay")
                checks.expect(attempts.value == 1)
                checks.expect(operation.currentAttempt == 1)
                checks.expect(operation.success == false)
            }
        }
    }

    @Test("a group makes one attempt whatever its retry policy")
    func groupIgnoresPolicy() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.grouppolicy")
            let group = GroupOperation([ConcurrentOperation { $0.success = false }])
            group.retryPolicy = .constant(.milliseconds(1))
            let done = DispatchSemaphore(value: 0)
            group.completionBlock = { done.signal() }
            queuer.addOperation(group)
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(group.currentAttempt == 1)
            checks.expect(group.success == false)
        }
    }
}
