import ConcurrencyKit
import ConcurrencyKitTesting
import Dispatch
import TestSupport
import Testing

/// Durations from about 292 years of nanoseconds, beyond what Dispatch counts, up to the largest `Duration`.
///
/// Each means "never" or "without a limit" to every timed API. `Duration.components` traps on all but the first.
private let huge: [Duration] = [
    .nanoseconds(Int64.max),
    .seconds(1e19),
    .seconds(Int64.max),
    Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999),
    Duration(attoseconds: .max),
    Duration(attoseconds: .max / 2) + Duration(attoseconds: .max / 2),
]

/// Durations of zero or less, down to the smallest `Duration`.
///
/// Each means "now" (only look) to a wait.
private let nonPositive: [Duration] = [
    .zero,
    Duration(attoseconds: -1),
    .nanoseconds(-1),
    .seconds(-1),
    .nanoseconds(Int64.min),
    .seconds(-1e19),
    .seconds(Int64.min),
    Duration(attoseconds: .min),
]

/// How long a test watches for a fire that must never come: a bounded look, which is proof enough of "not yet".
private let watch = DispatchTimeInterval.milliseconds(50)

@Suite("Timed APIs at the ends of the Duration range", .timeLimit(.minutes(1)))
struct TimedAPIExtremesTests {
    @Test("a blocking semaphore wait: a huge timeout waits for the signal, zero or less only looks")
    func semaphoreWait() async throws {
        try await offPoolTest { checks in
            for timeout in huge {
                let semaphore = CountingSemaphore()
                DispatchQueue.global().async { semaphore.signal() }
                checks.expect(semaphore.wait(timeout) == .success, "huge \(timeout)")
            }
            for timeout in nonPositive {
                let empty = CountingSemaphore()
                checks.expect(empty.wait(timeout) == .timedOut, "empty, \(timeout)")
                let free = CountingSemaphore(.binary)
                checks.expect(free.wait(timeout) == .success, "free, \(timeout)")
            }
        }
    }

    @Test("an async semaphore wait, on the continuous clock and on a test clock, alike")
    func semaphoreAsyncWait() async {
        for timeout in huge {
            let semaphore = CountingSemaphore()
            async let granted = semaphore.wait(timeout: timeout)
            await self.whenWaiting(semaphore) { semaphore.signal() }
            #expect(await granted, "huge \(timeout)")
            let clock = TestClock()
            let onClock = CountingSemaphore()
            async let grantedOnClock = onClock.wait(timeout: timeout, clock: clock)
            await self.whenWaiting(onClock) { onClock.signal() }
            #expect(await grantedOnClock, "huge \(timeout) on a test clock")
            #expect(clock.deadlines.isEmpty, "no sleeper for a wait without a limit")
        }
        for timeout in nonPositive {
            #expect(await CountingSemaphore().wait(timeout: timeout) == false, "\(timeout)")
            #expect(await CountingSemaphore().wait(timeout: timeout, clock: TestClock()) == false, "\(timeout)")
            #expect(await CountingSemaphore(.binary).wait(timeout: timeout), "free, \(timeout)")
        }
    }

    @Test("a group wait: a huge timeout waits for the group, zero or less only looks")
    func groupWait() async throws {
        try await offPoolTest { checks in
            for timeout in huge {
                let group = GCDGroup()
                group.enter()
                DispatchQueue.global().async { group.leave() }
                checks.expect(group.wait(timeout: timeout) == .success, "huge \(timeout)")
            }
            for timeout in nonPositive {
                let busy = GCDGroup()
                busy.enter()
                checks.expect(busy.wait(timeout: timeout) == .timedOut, "busy, \(timeout)")
                busy.leave()
                checks.expect(GCDGroup().wait(timeout: timeout) == .success, "empty, \(timeout)")
            }
        }
    }

    @Test("a huge delay never fires: GCDQueue.after, GCDTimer, Scheduler")
    func delaysNeverFire() async {
        let fired = AtomicBox(0)
        let queue = GCDQueue(name: "extremes", kind: .serial)
        var timers: [GCDTimer] = []
        var schedulers: [Scheduler] = []
        for delay in huge {
            queue.after(delay) { fired.mutate { $0 += 1 } }
            timers.append(GCDTimer.scheduleWithInterval(delay, onQueue: queue) { fired.mutate { $0 += 1 } })
            let repeating = GCDTimer(queue: queue, interval: .zero)
            repeating.repeatDuration = delay
            repeating.toleranceDuration = delay
            let firstFire = CountingSemaphore()
            repeating.handler {  // its first fire is due at once, and counts
                fired.mutate { $0 += 1 }
                firstFire.signal()
            }
            repeating.start()
            #expect(await firstFire.wait(timeout: .seconds(10)), "the first fire of a timer repeating every \(delay)")
            timers.append(repeating)
            schedulers.append(Scheduler(after: delay, repeating: delay) { fired.mutate { $0 += 1 } })
        }
        // Each repeating timer fired once, at once; nothing else may fire.
        let settled = CountingSemaphore()
        DispatchQueue.global().asyncAfter(deadline: .now() + watch) { settled.signal() }
        #expect(await settled.wait(timeout: .seconds(10)))
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
        #expect(fired.value == huge.count)
        #expect(timers.allSatisfy { $0.isRunning })
        for timer in timers { timer.stop() }
        for scheduler in schedulers { scheduler.cancel() }
    }

    @Test("a test clock's instant prints its offset at any size, exact to the attosecond")
    func instantDescription() {
        #expect(TestClock.Instant(offset: .seconds(1e19)).description == "10000000000000000000.0 seconds")
        #expect(TestClock.Instant(offset: .seconds(-1e19)).description == "-10000000000000000000.0 seconds")
        #expect(
            TestClock.Instant(offset: Duration(attoseconds: .max)).description
                == "170141183460469231731.687303715884105727 seconds"
        )
        #expect(
            TestClock.Instant(offset: Duration(attoseconds: .min)).description
                == "-170141183460469231731.687303715884105728 seconds"
        )
        #expect(TestClock.Instant(offset: Duration(attoseconds: -1)).description == "-0.000000000000000001 seconds")
    }

    @Test("a retry policy with huge durations gives the longest wait without trapping")
    func retryPolicy() {
        for maximum in huge {
            let policy = RetryPolicy.exponential(initial: .seconds(1), maximum: maximum, jitter: 0.5)
            #expect(policy.delay(beforeRetry: 100) <= maximum)
            let capped = RetryPolicy.exponential(initial: maximum, maximum: maximum)
            #expect(capped.delay(beforeRetry: 1) == maximum)
        }
    }

    @Test("a huge manual-completion patience means no watch, and nothing traps")
    func hugePatience() async {
        await #expect(processExitsWith: .success) {
            let queue = DispatchQueue(label: "test.extremes.patience")
            let kept = AtomicBox<[CommandCompletionClosure]>([])
            let ran = CountingSemaphore()
            let values = huge.map { _ in QueueSafeValue(value: 0) }
            for (patience, value) in zip(huge, values) {
                ManualCompletionDoctor.patience = patience
                value.async(performIn: queue).lowestPriority.set(manualCompletion: { count, done in
                    count += 1
                    kept.mutate { $0.append(done) }  // returns without calling done: the doctor watches it
                    ran.signal()
                })
                guard await ran.wait(timeout: .seconds(10)) else { fatalError("the command did not run") }
            }
            for done in kept.value { done() }
            // Each command's job may still be ending on the queue after its closure signalled (the closure's return is
            // noted there, and the value released); the child exits once the queue is idle, so that nothing is in
            // flight when LeakSanitizer looks at exit (the ASan stage saw this child exit with 1 once, the code of
            // ASan and its leak check).
            queue.sync {}
            withExtendedLifetime(values) {}
        }
    }

    /// Runs `signal` once a task waits in `semaphore`'s line.
    private func whenWaiting(_ semaphore: CountingSemaphore, _ signal: @Sendable () -> Void) async {
        while semaphore.waiterCount == 0 { await Task.yield() }
        signal()
    }
}
