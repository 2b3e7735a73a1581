import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

// Schedule chaos exists in debug builds only: release builds compile every chaos point to nothing.
#if DEBUG
@Suite("Schedule chaos", .timeLimit(.minutes(1)))
struct ScheduleChaosTests {
    @Test("one seed and thread number always give the same choices; another seed or thread gives others")
    func decisionsAreReproducible() {
        let first = ScheduleChaos.decisions(seed: 42, threadOrdinal: 3, count: 500)
        #expect(first == ScheduleChaos.decisions(seed: 42, threadOrdinal: 3, count: 500))
        #expect(first != ScheduleChaos.decisions(seed: 43, threadOrdinal: 3, count: 500))
        #expect(first != ScheduleChaos.decisions(seed: 42, threadOrdinal: 4, count: 500))
        #expect(first.contains(.yield))
        #expect(first.contains { if case .pause = $0 { true } else { false } })
        #expect(first.contains(.proceed))
        for case .pause(let microseconds) in first {
            #expect((1...20).contains(microseconds))
        }
    }

    @Test("CONCURRENCYKIT_CHAOS takes a decimal seed; anything else leaves chaos off")
    func environmentValues() {
        #expect(ScheduleChaos.seed(environmentValue: "1234") == 1234)
        #expect(ScheduleChaos.seed(environmentValue: nil) == nil)
        #expect(ScheduleChaos.seed(environmentValue: "") == nil)
        #expect(ScheduleChaos.seed(environmentValue: "on") == nil)
    }

    @Test("off by default: no seed, and every point carries on")
    func offByDefault() async {
        await #expect(processExitsWith: .success) {
            CLibrary.setEnvironmentValue(ScheduleChaos.environmentVariable, "")
            #expect(ScheduleChaos.seed == nil)
            #expect(ScheduleChaos.currentThreadOrdinal == nil)
            #expect((0..<100).allSatisfy { _ in ScheduleChaos.step(.lockAcquire) == .proceed })
        }
    }

    @Test("a thread under a seed makes exactly the choices of its seed and number, and setting the seed repeats them")
    func threadsFollowTheirSequence() async {
        await #expect(processExitsWith: .success) {
            let runs = AtomicBox<[(UInt64, [ScheduleChaos.Decision])]>([])
            for _ in 0..<2 {
                ScheduleChaos.seed = 7
                #expect(
                    runOnThreads(1) { _ in
                        let decisions = (0..<300).map { _ in ScheduleChaos.step(.turnHandOver) }
                        let ordinal = ScheduleChaos.currentThreadOrdinal ?? .max
                        runs.mutate { $0.append((ordinal, decisions)) }
                    }
                )
            }
            ScheduleChaos.seed = nil
            let recorded = runs.value
            #expect(recorded.count == 2)
            for (ordinal, decisions) in recorded {
                #expect(decisions == ScheduleChaos.decisions(seed: 7, threadOrdinal: ordinal, count: 300))
            }
            #expect(recorded[0].0 == recorded[1].0, "setting the seed numbers threads from 0 again")
            #expect(recorded[0].1 == recorded[1].1)
        }
    }

    @Test("locks stay exclusive with chaos at every acquire and release")
    func locksUnderChaos() async {
        await #expect(processExitsWith: .success) {
            ScheduleChaos.seed = 99
            let lock = MutexLock(name: "chaos counter")
            nonisolated(unsafe) var counter = 0  // guarded by `lock`
            #expect(
                runOnThreads(contendingThreads) { _ in
                    for _ in 0..<2_000 { lock.withLock { counter += 1 } }
                }
            )
            #expect(lock.withLock { counter } == contendingThreads * 2_000)
        }
    }
}
#endif
