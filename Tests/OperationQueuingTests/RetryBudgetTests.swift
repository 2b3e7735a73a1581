import ConcurrencyKitTesting
import TestSupport
import Testing

@testable import OperationQueuing

private struct Down: Error {}

/// The largest capacity the precondition accepts: `Int64.max` millionths of a retry, in whole retries.
private let largestCapacity = Int(Int64.max / 1_000_000)

/// What a budget should hold, in millionths of a retry, computed without any bound on the sums.
private struct BudgetModel {
    let deposit: Int128
    let capacity: Int128
    var held: Int128

    init(retriesPerCall: Double, capacity: Int) {
        self.deposit = Int128((retriesPerCall * 1_000_000).rounded())
        self.capacity = Int128(capacity) * 1_000_000
        self.held = self.capacity
    }

    var availableRetries: Int { Int(self.held / 1_000_000) }

    mutating func recordCall() { self.held = min(self.capacity, self.held + self.deposit) }

    mutating func returnRetry() { self.held = min(self.capacity, self.held + 1_000_000) }

    mutating func withdrawRetry() -> Bool {
        guard self.held >= 1_000_000 else { return false }
        self.held -= 1_000_000
        return true
    }
}

@Suite("RetryBudget", .timeLimit(.minutes(1)))
struct RetryBudgetTests {
    @Test(
        "at the largest capacity, calls that fail and retry keep the balance without overflow",
        arguments: [0.1, 0.775807, 0.775808, 0.78, 0.999999, 1]
    )
    func largestCapacityThroughRun(retriesPerCall: Double) async throws {
        let queuer = Queuer(name: "test.budget.largest")
        let budget = RetryBudget(retriesPerCall: retriesPerCall, capacity: largestCapacity)
        let retries = RetryConfiguration(maximumAttempts: 3, policy: .immediate, budget: budget)
        let attempts = AtomicBox(0)
        for _ in 0..<20 {
            await #expect(throws: Down.self) {
                try await queuer.run(retrying: retries) { () -> Int in
                    attempts.mutate { $0 += 1 }
                    throw Down()
                }
            }
            #expect(try await queuer.run(retrying: retries) { 1 } == 1)
        }
        #expect(attempts.value == 60, "every failing call was retried twice: the budget is all but endless")
        #expect(budget.availableRetries >= largestCapacity - 40)
        #expect(budget.availableRetries <= largestCapacity)
    }

    @Test("at the largest capacity and 0.1 per call, deposits refill the budget, then a cancelled retry is returned")
    func refilledThenReturned() async throws {
        let clock = TestClock()
        let queuer = Queuer(name: "test.budget.refilled")
        let budget = RetryBudget(capacity: largestCapacity)
        let retries = RetryConfiguration(maximumAttempts: 2, policy: .constant(.seconds(3_600)), budget: budget)
        let call = Task { try await queuer.run(retrying: retries, clock: clock) { () -> Int in throw Down() } }
        try await clock.waitForSleepers(1)
        #expect(budget.availableRetries == largestCapacity - 1, "the retry that waits took one out")
        // Ten calls put the retry back by deposits: the budget is full again.
        for _ in 0..<10 { #expect(try await queuer.run(retrying: retries, clock: clock) { 1 } == 1) }
        #expect(budget.availableRetries == largestCapacity)
        call.cancel()
        let callEnded = await completes { await #expect(throws: CancellationError.self) { try await call.value } }
        #expect(callEnded)
        #expect(budget.availableRetries == largestCapacity, "the returned retry finds the budget full")
    }

    @Test(
        "deposits, withdrawals and returns at the bounds of the parameters match a model without overflow",
        arguments: [1, 10, largestCapacity - 1, largestCapacity]
    )
    func boundsAgainstAModel(capacity: Int) {
        var generator = PropertyRun.random(UInt64(capacity))
        for retriesPerCall in [0, 0.000001, 0.1, 0.5, 0.775807, 0.775808, 0.999999, 1] {
            let budget = RetryBudget(retriesPerCall: retriesPerCall, capacity: capacity)
            var model = BudgetModel(retriesPerCall: retriesPerCall, capacity: capacity)
            for step in 0..<2_000 {
                switch generator.next() % 3 {
                case 0:
                    budget.recordCall()
                    model.recordCall()
                case 1:
                    budget.returnRetry()
                    model.returnRetry()
                default:
                    #expect(budget.withdrawRetry() == model.withdrawRetry(), "step \(step)")
                }
                guard budget.availableRetries == model.availableRetries else {
                    let found = budget.availableRetries
                    Issue.record(
                        Comment(
                            rawValue: "capacity \(capacity), \(retriesPerCall) per call, step \(step): \(found) "
                                + "retries, not \(model.availableRetries)"
                        )
                    )
                    return
                }
            }
        }
    }

    @Test("a capacity above the largest traps with a message naming the type, the value and the bound")
    func capacityAboveTheLargestTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RetryBudget(capacity: Int(Int64.max / 1_000_000) + 1)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("RetryBudget: capacity is the most retries the budget holds and must be from 1 to"))
        #expect(stderr.contains("9223372036854, not 9223372036855"))
    }
}
