import AtomicPrimitives
import Dispatch
import Foundation
import TestSupport
import Testing

@Suite("CountingSemaphore from async code", .timeLimit(.minutes(1)))
struct CountingSemaphoreAsyncTests {
    /// How many resources a semaphore has free right now, taking them all back afterwards.
    ///
    /// It takes them with the blocking `wait(.now())`, which must not run on a task: it runs off the pool.
    private func freeResources(_ semaphore: CountingSemaphore) async -> Int {
        await offPool {
            var count = 0
            while semaphore.wait(.now()) == .success { count += 1 }
            for _ in 0..<count { semaphore.signal() }
            return count
        }
    }

    @Test(
        "an async wait takes a free resource at once, and the next one suspends until a signal",
        arguments: ["acquire()", "wait()"]
    )
    func takesAndSuspends(form: String) async throws {
        let semaphore = CountingSemaphore(.binary)
        let take: @Sendable () async throws -> Void = {
            if form == "acquire()" { try await semaphore.acquire() } else { try await semaphore.wait() }
        }
        try await take()
        #expect(await self.freeResources(semaphore) == 0)
        let waiter = Task { try await take() }
        #expect(await suspendUntil { semaphore.waiterCount == 1 })
        #expect(semaphore.signal() == 1, "signal hands the resource to the suspended task")
        #expect(try await completes { try await waiter.value })
        #expect(await self.freeResources(semaphore) == 0, "the task holds it")
    }

    @Test("blocked threads and suspended tasks are served in the order they arrived")
    func mixedWaitersAreFIFO() async {
        let semaphore = CountingSemaphore()
        let order = AtomicBox([String]())
        let served = DispatchGroup()
        var tasks: [Task<Void, any Error>] = []
        for (index, kind) in ["thread", "task", "thread", "task", "task", "thread"].enumerated() {
            let name = "\(kind) \(index)"
            served.enter()
            if kind == "thread" {
                onNewThread {
                    semaphore.wait()
                    order.mutate { $0.append(name) }
                    served.leave()
                }
            } else {
                tasks.append(
                    Task {
                        try await semaphore.wait()
                        order.mutate { $0.append(name) }
                        served.leave()
                    }
                )
            }
            #expect(await suspendUntil { semaphore.waiterCount == index + 1 }, "\(name) is in line")
        }
        for index in 0..<6 {
            semaphore.signal()
            #expect(await suspendUntil { order.value.count == index + 1 }, "signal \(index) served one waiter")
        }
        #expect(order.value == ["thread 0", "task 1", "thread 2", "task 3", "task 4", "thread 5"])
        #expect(await waitOffPool(served))
        for task in tasks { _ = await task.result }
    }

    @Test("a waiting task that is cancelled throws CancellationError, leaves the line and takes nothing")
    func cancellationThrows() async {
        let semaphore = CountingSemaphore()
        let waiter = Task { try await semaphore.wait() }
        #expect(await suspendUntil { semaphore.waiterCount == 1 })
        waiter.cancel()
        let waiterEnded = await completes { await #expect(throws: CancellationError.self) { try await waiter.value } }
        #expect(waiterEnded)
        #expect(semaphore.waiterCount == 0)
        #expect(semaphore.signal() == 0, "nobody waits any more: the signal adds a resource")
        #expect(await self.freeResources(semaphore) == 1)
    }

    @Test("a task cancelled before it waits throws at once, even with a resource free, and takes nothing")
    func alreadyCancelled() async {
        let semaphore = CountingSemaphore(.binary)
        let waiter = Task {
            _ = await suspendUntil { Task.isCancelled }  // the task is cancelled before it gets further
            try await semaphore.wait()
        }
        waiter.cancel()
        let waiterEnded = await completes { await #expect(throws: CancellationError.self) { try await waiter.value } }
        #expect(waiterEnded)
        #expect(await self.freeResources(semaphore) == 1)
    }

    @Test("a cancel racing a signal neither loses nor duplicates the resource", arguments: [false, true])
    func cancelRacesSignal(withTimeout: Bool) async {
        let rounds = 3_000
        var kept = 0
        for _ in 0..<rounds {
            let semaphore = CountingSemaphore()
            let waiter = Task {
                withTimeout ? await semaphore.wait(timeout: patienceLimit) : ((try? await semaphore.wait()) != nil)
            }
            #expect(await suspendUntil { semaphore.waiterCount == 1 })
            // Two pooled threads released together: one signals, one cancels, each after a random few spins. (Pooled,
            // not new threads: hundreds of short-lived threads per test strain the sanitizers.)
            let flag = SpinFlag()
            let finished = AtomicBox(0)
            for index in 0..<2 {
                DispatchQueue.global().async {
                    _ = flag.spin(until: 1)
                    for _ in 0..<Int.random(in: 0..<200) { flag.pause() }
                    if index == 0 { semaphore.signal() } else { waiter.cancel() }
                    finished.mutate { $0 += 1 }
                }
            }
            flag.set(1)
            #expect(await suspendUntil { finished.value == 2 })
            let gotIt = await waiter.value
            let free = await self.freeResources(semaphore)
            #expect((gotIt ? 1 : 0) + free == 1, "granted: \(gotIt), free afterwards: \(free)")
            if gotIt { kept += 1 }
            #expect(semaphore.waiterCount == 0)
        }
        // Both outcomes are legitimate; the check above is what matters. Report how the race fell.
        print("cancelRacesSignal(withTimeout: \(withTimeout)): the task kept the resource in \(kept)/\(rounds) rounds")
    }

    @Test("wait(timeout:) returns true when signalled in time, and false when its task is cancelled")
    func timeoutSignalledOrCancelled() async {
        let semaphore = CountingSemaphore()
        let signalled = Task { await semaphore.wait(timeout: patienceLimit) }
        #expect(await suspendUntil { semaphore.waiterCount == 1 })
        semaphore.signal()
        let signalledReturned = await completes { #expect(await signalled.value == true) }
        #expect(signalledReturned)
        let cancelled = Task { await semaphore.wait(timeout: .seconds(30)) }
        #expect(await suspendUntil { semaphore.waiterCount == 1 })
        cancelled.cancel()
        let cancelledReturned = await completes { #expect(await cancelled.value == false) }
        #expect(cancelledReturned)
        #expect(await self.freeResources(semaphore) == 0)
    }

    @Test("withPermit runs at most `resources` bodies at once and gives every permit back")
    func withPermitLimits() async throws {
        let semaphore = CountingSemaphore(resources: 2)
        let gauge = ConcurrencyGauge()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await semaphore.withPermit {
                        gauge.measure { Thread.sleepBriefly() }
                        await Task.yield()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(gauge.peak <= 2)
        #expect(gauge.peak >= 1)
        #expect(await self.freeResources(semaphore) == 2)
    }

    /// A plain count that only the semaphore guards.
    ///
    /// ThreadSanitizer reports a race on it unless every hand-over from a `signal()` to a task is a happens-before
    /// edge it can see, also to a task resumed before it had finished suspending (the runtime orders that case with
    /// atomics ThreadSanitizer does not see). Meaningful in the gate's ThreadSanitizer stage; everywhere, the count
    /// must come out exact.
    final class PlainCount: @unchecked Sendable {
        var value = 0
    }

    @Test("what a task writes before signal() is seen by the task it hands the resource to, without a race")
    func handOverIsAnEdge() async throws {
        let semaphore = CountingSemaphore(.binary)
        let count = PlainCount()
        let tasks = 8
        let rounds = 300
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    for _ in 0..<rounds {
                        try await semaphore.acquire()
                        count.value += 1
                        await Task.yield()  // so that the others queue, and each hand-over goes to a waiter
                        semaphore.signal()
                    }
                }
            }
            try await group.waitForAll()
        }
        try await semaphore.acquire()
        #expect(count.value == tasks * rounds)
        semaphore.signal()
    }

    @Test("withPermit gives the permit back when the body throws, and skips the body when cancelled while waiting")
    func withPermitThrowsAndCancels() async throws {
        struct Boom: Error {}
        let semaphore = CountingSemaphore(.binary)
        await #expect(throws: Boom.self) { try await semaphore.withPermit { throw Boom() } }
        #expect(await self.freeResources(semaphore) == 1)
        try await semaphore.wait()
        let ran = AtomicBox(false)
        let waiter = Task { try await semaphore.withPermit { ran.mutate { $0 = true } } }
        #expect(await suspendUntil { semaphore.waiterCount == 1 })
        waiter.cancel()
        let waiterEnded = await completes { await #expect(throws: CancellationError.self) { try await waiter.value } }
        #expect(waiterEnded)
        #expect(ran.value == false)
        semaphore.signal()
        #expect(await self.freeResources(semaphore) == 1)
    }

    @Test("a semaphore released while nobody waits, after async waits, is freed")
    func releasedAfterAsyncUse() async throws {
        weak var weakSemaphore: CountingSemaphore?
        do {
            let semaphore = CountingSemaphore()
            weakSemaphore = semaphore
            #expect(await semaphore.wait(timeout: .milliseconds(1)) == false)
            semaphore.signal()
            try await semaphore.wait()
        }
        // The timed-out wait's timer is cancelled at once, and Dispatch lets its handler go just after: soon, not at
        // a deadline.
        #expect(await suspendUntil { weakSemaphore == nil }, "no timer or waiter keeps it alive")
    }
}

/// withPermit from a main-actor context and from an actor: the body may touch their state (compile-time checks).
@MainActor
private final class MainActorUser {
    var count = 0
    let semaphore = CountingSemaphore(.binary)

    func bump() async throws {
        try await self.semaphore.withPermit { self.count += 1 }
    }
}

private actor ActorUser {
    var count = 0
    let semaphore = CountingSemaphore(.binary)

    func bump() async throws -> Int {
        try await self.semaphore.withPermit {
            self.count += 1
            return self.count
        }
    }
}

@Suite("CountingSemaphore isolation", .timeLimit(.minutes(1)))
struct CountingSemaphoreIsolationTests {
    @Test("withPermit compiles and runs from @MainActor, from an actor and from nonisolated code")
    @MainActor
    func isolations() async throws {
        let user = MainActorUser()
        try await user.bump()
        #expect(user.count == 1)
        #expect(try await ActorUser().bump() == 1)
        let plain = CountingSemaphore(.binary)
        var local = 0
        try await plain.withPermit { local += 1 }
        #expect(local == 1)
    }
}

extension Thread {
    /// Sleeps 1 ms: keeps a body inside a gauge long enough for others to overlap it, if they could.
    fileprivate static func sleepBriefly() { Thread.sleep(forTimeInterval: 0.001) }
}
