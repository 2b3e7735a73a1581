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
@Suite("Contract properties: semaphore permits", .serialized, .timeLimit(propertyTimeLimit))
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
                let finished = runOnThreads(2) { index in
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
            let threadsFinished = await waitOffPool(threadsDone)
            #expect(threadsFinished, "\(PropertyRun.failure("every blocking wait returns", round: round))")
            #expect(
                await suspendUntil { semaphore.waiterCount == 0 },
                "\(PropertyRun.failure("no waiter stays in line after it gave up", round: round))"
            )
            // Off the pool: even a wait that never blocks is a blocking call, which the checker reports from a task.
            let left = await offPool {
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

    /// Lifetime: a granted or cancelled timed wait releases its deadline timer at once.
    ///
    /// A timed wait holds a deadline timer, and the timer holds the waiter; once the wait is granted or cancelled,
    /// both go at once, not at the deadline (an hour here). Tasks wait with random timeouts of about an
    /// hour, some are cancelled at random moments, a thread signals until every wait has ended; then the process's
    /// count of live timed waits must come back to where it was.
    @Test("a timed wait that is granted or cancelled releases its deadline timer at once, not at its deadline")
    func timedWaitsReleaseTheirTimers() async {
        var random = PropertyRun.random(32)
        for round in 0..<PropertyRun.rounds(10) {
            let semaphore = CountingSemaphore(resources: 0)
            let before = CountingSemaphore.liveTimedWaits
            let waits = 40
            let tasks = (0..<waits).map { index in
                let seconds = 3_600 + index
                return Task { await semaphore.wait(timeout: .seconds(seconds)) }
            }
            let allEnded = Atomic<Bool>(false)
            let signaller = DispatchSemaphore(value: 0)
            let schedule = (0..<waits).map { _ in UInt32.random(in: 0..<200, using: &random) }
            onNewThread {
                var index = 0
                while !allEnded.load(ordering: .relaxed) {
                    semaphore.signal()
                    usleep(schedule[index % schedule.count])
                    index += 1
                }
                signaller.signal()
            }
            for task in tasks where random.chance(30) {
                try? await Task.sleep(for: .microseconds(Int.random(in: 0..<300, using: &random)))
                task.cancel()
            }
            var granted = 0
            for task in tasks where await task.value { granted += 1 }
            allEnded.store(true, ordering: .relaxed)
            let signallerStopped = await waitOffPool(signaller)
            #expect(signallerStopped, "\(PropertyRun.failure("the signalling thread stops", round: round))")
            let released = await suspendUntil { CountingSemaphore.liveTimedWaits - before < waits / 2 }
            let rule = PropertyRun.failure("a granted or cancelled timed wait releases its timer at once", round: round)
            let alive = CountingSemaphore.liveTimedWaits - before
            #expect(
                released,
                "\(rule): \(alive) of \(waits) timed waits alive (\(granted) granted, the others cancelled); deadlines 1 h away"
            )
            if !released { return }
        }
    }
}
