import AtomicPrimitives
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

/// CountingSemaphore: no permit is lost or duplicated.
///
/// Blocking waits with timeouts, async waits with timeouts, and
/// async waits that get cancelled race signals from threads and tasks; afterwards the permits left must be exactly
/// `initial + signals − successful waits`.
@Suite("Contract properties: semaphore permits", .serialized, .timeLimit(.minutes(1)))
struct SemaphorePropertyTests {
    /// Counts what the workers did.
    final class Tally: Sendable {
        let signals = Atomic<Int>(0)
        let successes = Atomic<Int>(0)

        func signal(_ semaphore: CountingSemaphore) {
            self.signals.add(1, ordering: .relaxed)
            semaphore.signal()
        }

        func took(_ success: Bool) {
            if success { self.successes.add(1, ordering: .relaxed) }
        }
    }

    @Test("no permit is lost or duplicated: threads and tasks, timeouts, cancellation, signals")
    func permitsAreConserved() async {
        var random = PropertyRun.random(30)
        let rounds = PropertyRun.rounds(30)
        for round in 0..<rounds {
            let initial = Int.random(in: 0...3, using: &random)
            let semaphore = CountingSemaphore(resources: initial)
            let tally = Tally()
            let seeds = (0..<6).map { random.derived($0) }
            let threadsDone = DispatchSemaphore(value: 0)
            onNewThread {
                let finished = runOnThreads(2, seconds: 10) { index in
                    var random = seeds[index]
                    for _ in 0..<60 {
                        if random.chance(45) {
                            tally.signal(semaphore)
                        } else {
                            let microseconds = Int.random(in: 0..<500, using: &random)
                            tally.took(semaphore.wait(.now() + .microseconds(microseconds)) == .success)
                        }
                    }
                }
                if finished { threadsDone.signal() }
            }
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<3 {
                    var random = seeds[2 + index]
                    group.addTask {
                        for _ in 0..<40 {
                            switch Int.random(in: 0..<4, using: &random) {
                            case 0:
                                tally.signal(semaphore)
                            case 1:
                                let microseconds = Int.random(in: 0..<500, using: &random)
                                tally.took(await semaphore.wait(timeout: .microseconds(microseconds)))
                            default:
                                // A wait that is cancelled at a random moment, maybe just as it is granted.
                                let waiter = Task {
                                    do {
                                        try await semaphore.wait()
                                        return true
                                    } catch {
                                        return false
                                    }
                                }
                                let pause = Int.random(in: 0..<300, using: &random)
                                if pause > 150 { try? await Task.sleep(for: .microseconds(pause)) }
                                waiter.cancel()
                                tally.took(await waiter.value)
                            }
                        }
                    }
                }
            }
            let threadsFinished = await waitOffPool(threadsDone, seconds: 10)
            #expect(threadsFinished, "\(PropertyRun.failure("every blocking wait returns", round: round))")
            #expect(
                await suspendUntil { semaphore.waiterCount == 0 },
                "\(PropertyRun.failure("no waiter stays in line after it gave up", round: round))"
            )
            let left = await offPool {  // the blocking form, even with a zero timeout, does not run on a task
                var left = 0
                while semaphore.wait(.now()) == .success { left += 1 }
                return left
            }
            let expected =
                initial + tally.signals.load(ordering: .relaxed) - tally.successes.load(ordering: .relaxed)
            #expect(
                left == expected,
                "\(PropertyRun.failure("permits left == initial + signals − successful waits", round: round)): \(left) left, expected \(initial) + \(tally.signals.load(ordering: .relaxed)) − \(tally.successes.load(ordering: .relaxed)) = \(expected)"
            )
            if left != expected { return }
        }
    }
}
