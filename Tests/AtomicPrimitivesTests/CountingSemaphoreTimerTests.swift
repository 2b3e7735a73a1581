import AtomicPrimitives
import Dispatch
import Foundation
import TestSupport
import Testing

/// The deadline timers of `wait(timeout:)`: each lives exactly as long as its wait.
@Suite("CountingSemaphore deadline timers", .timeLimit(.minutes(1)))
struct CountingSemaphoreTimerTests {
    @Test(
        "a timed wait that a signal grants, or a cancel ends, releases its timer at once, not at its deadline",
        arguments: [true, false]
    )
    func timerReleasedWithItsWait(granted: Bool) async {
        // In a process of its own: the count is process-wide, and other tests wait with deadlines too.
        await #expect(processExitsWith: .success) { [granted] in
            let semaphore = CountingSemaphore()
            for _ in 0..<300 {
                let waiter = Task { await semaphore.wait(timeout: .seconds(3_600)) }
                guard await suspendUntil({ semaphore.waiterCount == 1 }) else { exit(1) }
                if granted { semaphore.signal() } else { waiter.cancel() }
                guard await waiter.value == granted else { exit(2) }
            }
            // Dispatch releases a cancelled timer on one of its threads, a moment after the cancel.
            guard eventually({ CountingSemaphore.liveTimedWaits == 0 }) else { exit(3) }
        }
    }

    @Test("a timed wait that times out releases its timer")
    func timerReleasedAtTimeout() async {
        await #expect(processExitsWith: .success) {
            let semaphore = CountingSemaphore()
            for _ in 0..<20 {
                guard await semaphore.wait(timeout: .milliseconds(1)) == false else { exit(1) }
            }
            guard eventually({ CountingSemaphore.liveTimedWaits == 0 }) else { exit(2) }
        }
    }

    @Test("a deadline racing a signal neither loses nor duplicates the resource")
    func deadlineRacesSignal() async {
        let rounds = 200
        var granted = 0
        for round in 0..<rounds {
            let semaphore = CountingSemaphore()
            let waiter = Task { await semaphore.wait(timeout: .microseconds(50 * (round % 40))) }
            // The signal lands before, during or after the wait, and before, at or after its deadline.
            for _ in 0..<Int.random(in: 0..<2_000) { await Task.yield() }
            semaphore.signal()
            let gotIt = await waiter.value
            let free = await offPool {  // the blocking form, even with a zero timeout, does not run on a task
                var free = 0
                while semaphore.wait(.now()) == .success { free += 1 }
                return free
            }
            #expect((gotIt ? 1 : 0) + free == 1, "round \(round): granted \(gotIt), free afterwards \(free)")
            #expect(semaphore.waiterCount == 0)
            if gotIt { granted += 1 }
        }
        print("deadlineRacesSignal: the wait got the resource in \(granted)/\(rounds) rounds")
    }

    @Test(
        "resident memory stays flat over many timed waits granted long before their deadline",
        .enabled(if: !runningUnderSanitizer, "a sanitizer's quarantine holds freed memory back")
    )
    func memoryStaysFlat() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let semaphore = CountingSemaphore()
            let signaller = CountingSemaphore()
            // A thread signals each round once the task is in line, so that every wait queues with its timer.
            let rounds = 40_000
            onNewThread {
                for _ in 0..<(rounds + 5_000) {
                    let limit = deadline()
                    while semaphore.waiterCount == 0 {
                        if DispatchTime.now() > limit { exit(4) }
                        sched_yield()
                    }
                    semaphore.signal()
                }
                signaller.signal()
            }
            for _ in 0..<5_000 {
                guard await semaphore.wait(timeout: .seconds(3_600)) else { exit(1) }
            }
            let before = residentBytes()
            for _ in 0..<rounds {
                guard await semaphore.wait(timeout: .seconds(3_600)) else { exit(2) }
            }
            guard await signaller.wait(timeout: patienceLimit) else { exit(3) }
            let grown = residentBytes() - before
            print("resident memory grew by \(grown >> 20) MiB over \(rounds) timed waits")
            // About 750 bytes a round when each timer outlives its wait: some 30 MiB here.
            if grown > 8 << 20 { exit(5) }
        }
        print(text(result?.standardOutputContent), terminator: "")
    }
}
