import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

@Suite("CountingSemaphore", .timeLimit(.minutes(1)))
struct CountingSemaphoreTests {
    @Test(
        "perform admits exactly as many threads as the semaphore has resources",
        arguments: [CountingSemaphore.Kind.binary, .counting(2), .counting(3)]
    )
    func admitsItsResourceCount(kind: CountingSemaphore.Kind) async throws {
        try await offPoolTest { checks in
            let resources = kind == .binary ? 1 : (kind == .counting(2) ? 2 : 3)
            let semaphore = CountingSemaphore(kind)
            let gauge = ConcurrencyGauge()
            let finished = runOnThreads(resources + 2) { _ in
                for _ in 0..<200 {
                    semaphore.perform { gauge.measure {} }
                }
            }
            checks.expect(finished)
            checks.expect(gauge.peak <= resources)
            checks.expect(gauge.peak >= 1)
        }
    }

    @Test("counting(n) lets n waits pass at once, and the next one wait")
    func countingPassesN() async throws {
        try await offPoolTest { checks in
            let semaphore = CountingSemaphore(resources: 3)
            for _ in 0..<3 {
                checks.expect(semaphore.wait(.now()) == .success)
            }
            checks.expect(semaphore.wait(.now()) == .timedOut)
        }
    }

    @Test("a barrier blocks until another thread signals")
    func barrierBlocksUntilSignal() async throws {
        try await offPoolTest { checks in
            let barrier = CountingSemaphore()
            let passed = DispatchSemaphore(value: 0)
            onNewThread {
                barrier.wait()
                passed.signal()
            }
            checks.expect(eventually { barrier.waiterCount == 1 })
            checks.expect(passed.wait(timeout: .now() + .milliseconds(50)) == .timedOut)
            checks.expect(barrier.signal() != 0, "signal reports that it woke the waiting thread")
            checks.expect(passed.wait(timeout: deadline()) == .success)
        }
    }

    @Test("signal and continue return 0 when nobody waits, and add a resource")
    func signalWithoutWaiters() async throws {
        try await offPoolTest { checks in
            let semaphore = CountingSemaphore(.barrier)
            checks.expect(semaphore.signal() == 0)
            checks.expect(semaphore.continue() == 0)
            checks.expect(semaphore.wait(.now()) == .success)
            checks.expect(semaphore.wait(.now()) == .success)
            checks.expect(semaphore.wait(.now()) == .timedOut)
        }
    }

    @Test("wait(_:) with a Duration: zero or less takes only a free resource, a huge one waits without a limit")
    func durationWait() async throws {
        try await offPoolTest { checks in
            let semaphore = CountingSemaphore()
            checks.expect(semaphore.wait(Duration.zero) == .timedOut)
            checks.expect(semaphore.wait(.seconds(-1)) == .timedOut)
            checks.expect(semaphore.wait(.milliseconds(1)) == .timedOut)
            semaphore.signal()
            checks.expect(semaphore.wait(Duration.zero) == .success, "a free resource is taken with no time to wait")
            DispatchQueue.global().async { semaphore.signal() }
            checks.expect(semaphore.wait(.seconds(Int64.max)) == .success)
            checks.expect(semaphore.waiterCount == 0)
        }
    }

    @Test("wait with a timeout returns .timedOut no earlier than the deadline")
    func waitTimesOut() async throws {
        try await offPoolTest { checks in
            let semaphore = CountingSemaphore()
            let start = DispatchTime.now()
            checks.expect(semaphore.wait(.now() + .milliseconds(30)) == .timedOut)
            checks.expect(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds >= 30_000_000)
        }
    }

    @Test("perform gives the resource back when its body throws")
    func performSignalsOnThrow() async throws {
        try await offPoolTest { checks in
            struct Boom: Error {}
            let semaphore = CountingSemaphore(.binary)
            checks.expect(throws: Boom.self) {
                try semaphore.perform { throw Boom() }
            }
            checks.expect(semaphore.wait(.now()) == .success, "the resource was given back after the throw")
            checks.expect(semaphore.wait(.now()) == .timedOut, "and only that one resource")
            semaphore.signal()
            checks.expect(semaphore.perform { 7 } == 7)
            checks.expect(semaphore.wait(.now()) == .success, "perform gave its resource back after returning")
        }
    }

    @Test("releasing a semaphore whose resources are taken is safe")
    func releaseWhileTaken() async {
        await #expect(processExitsWith: .success) {
            // The body blocks (syncs, waits): on a thread of its own, not on the exit test's task.
            await offPool {
                for kind in [CountingSemaphore.Kind.binary, .counting(2)] {
                    let semaphore = CountingSemaphore(kind)
                    semaphore.wait()
                }
            }
        }
    }

    @Test("a negative resource count traps with a message naming the value")
    func negativeCountTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = CountingSemaphore(resources: -2)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("-2"))
        await #expect(processExitsWith: .failure) {
            _ = CountingSemaphore(.counting(-1))
        }
    }

    @Test("signal() counts a parked waiter once: the second of two quick signals returns 0, as DispatchSemaphore")
    func signalCountsEachWaiterOnce() async throws {
        try await offPoolTest { checks in
            for _ in 0..<20 {
                let semaphore = CountingSemaphore()
                let woke = DispatchSemaphore(value: 0)
                onNewThread {
                    semaphore.wait()
                    woke.signal()
                }
                checks.expect(eventually { semaphore.waiterCount == 1 })
                let first = semaphore.signal()
                let second = semaphore.signal()
                checks.expect(first == 1)
                checks.expect(second == 0, "the only waiter was already woken")
                checks.expect(woke.wait(timeout: deadline()) == .success)
                checks.expect(semaphore.wait(.now()) == .success, "the second signal left a resource")
            }
        }
    }

    @Test("with two parked waiters, two signals each wake one and a third wakes none")
    func signalCountsTwoWaiters() async throws {
        try await offPoolTest { checks in
            let semaphore = CountingSemaphore()
            let woke = DispatchSemaphore(value: 0)
            for _ in 0..<2 {
                onNewThread {
                    semaphore.wait()
                    woke.signal()
                }
            }
            checks.expect(eventually { semaphore.waiterCount == 2 })
            checks.expect([semaphore.signal(), semaphore.signal(), semaphore.signal()] == [1, 1, 0])
            for _ in 0..<2 { checks.expect(woke.wait(timeout: deadline()) == .success) }
        }
    }

    @Test("signalling past Int.max resources traps with a message naming CountingSemaphore")
    func overflowTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let semaphore = CountingSemaphore(.counting(Int.max))
            semaphore.signal()
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("CountingSemaphore: signal() would raise the resource count past Int.max"))
    }
}
