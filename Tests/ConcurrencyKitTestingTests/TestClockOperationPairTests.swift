import AtomicPrimitives
import ConcurrencyKitTesting
import TestSupport
import Testing

/// Every ordered pair of `TestClock`'s operations on one clock, from two threads at once, under the lock-order
/// checker: the clock's table of the machine in `ContractPropertyTests/OperationPairTests.swift`.
@Suite(
    "TestClock: every pair of operations on one clock, on two threads",
    .timeLimit(.minutes(3)),  // past one pair's patience, so that a stuck pair is named
    .enabled(if: LockOrderChecking.mode != .off, "the lock-order checker is off")
)
struct TestClockOperationPairTests {
    /// `advance(to:)` is left out: an instant read from `now` may be passed by another thread's move before the
    /// call, which then traps as a move back in time (a misuse, not a race of the clock's); `advance(by:)` takes
    /// the same path.
    @Test("advance, sleep, cancel, waitForSleepers, run and the readings, against each other and release")
    func everyPair() async {
        let table = PairTable(
            "TestClock",
            make: { TestClock() },
            operations: [
                .sync("advance(by:)") { $0.advance(by: .seconds(1)) },
                .sync("readings") { clock in _ = (clock.now, clock.deadlines, clock.minimumResolution) },
                .async("sleep, cancelled") { clock in
                    let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
                    sleeper.cancel()
                    _ = await sleeper.result
                },
                .async("waitForSleepers(0)") { _ = try? await $0.waitForSleepers(0) },
                .async("run()") { _ = try? await $0.run() },
                .async("run an operation that sleeps") { clock in
                    _ = try? await clock.run { try await clock.sleep(for: .seconds(3)) }
                },
            ]
        )
        let rounds = PropertyRun.rounds(1)
        let failures = await offPool { OperationPairs.run(table, rounds: rounds) }
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
    }
}
