import AtomicPrimitives
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

/// ParkedThread: the grant a blocked thread waits on, its timed form, and the spin policy.
@Suite("ParkedThread", .serialized, .timeLimit(.minutes(1)))
struct ParkedThreadTests {
    @Test("a grant that comes before the wait, or during it, ends the wait, waking the waiter if it sleeps")
    func grantEndsTheWait() async throws {
        try await offPoolTest { checks in
            let early = ParkedThread()
            early.grant()
            checks.expect(early.waitForGrant(untilUptimeNanoseconds: deadline().uptimeNanoseconds))
            // A waiter granted 50 ms into its wait, past its watch.
            let late = ParkedThread()
            let returned = DispatchSemaphore(value: 0)
            let granted = Atomic<Bool>(false)
            onNewThread {
                let limit = deadline().uptimeNanoseconds
                granted.store(late.waitForGrant(untilUptimeNanoseconds: limit), ordering: .relaxed)
                returned.signal()
            }
            checks.expect(returned.wait(timeout: .now() + .milliseconds(50)) == .timedOut)
            // Asleep by now unless the machine is loaded; either way the grant reaches it, and only a sleeper needs a
            // wake-up.
            let found = late.handOver()
            checks.expect(found != .timedOut)
            if found == .sleeping { late.wake() }
            checks.expect(returned.wait(timeout: deadline()) == .success)
            checks.expect(granted.load(ordering: .relaxed))
        }
    }

    @Test("a timed wait whose deadline passes returns false, and a grant after it finds the waiter gone")
    func deadlineEndsTheWait() async throws {
        try await offPoolTest { checks in
            for milliseconds in [0, 1, 20] {
                let thread = ParkedThread()
                let limit = DispatchTime.now() + .milliseconds(milliseconds)
                checks.expect(!thread.waitForGrant(untilUptimeNanoseconds: limit.uptimeNanoseconds))
                checks.expect(DispatchTime.now() >= limit)
                checks.expect(thread.handOver() == .timedOut, "a grant after \(milliseconds) ms")
            }
        }
    }

    /// More waiters than processors: at no moment do more threads watch than the processors less one; the others
    /// sleep at once, and every one of them is granted in the end.
    @Test("nobody watches beyond the processors less one; the rest sleep, and all are granted")
    func watchersStayUnderTheLimit() async throws {
        try await offPoolTest { checks in
            let count = 4 * usableProcessorCount() + 4
            let threads = (0..<count).map { _ in ParkedThread() }
            // Sampled from before the first waiter starts until every one of them has had time to go to sleep.
            let most = Atomic<Int>(0)
            let sampling = Atomic<Bool>(true)
            let sampled = DispatchSemaphore(value: 0)
            onNewThread {
                while sampling.load(ordering: .relaxed) {
                    let now = ParkedThread.watchingNow
                    if now > most.load(ordering: .relaxed) { most.store(now, ordering: .relaxed) }
                }
                sampled.signal()
            }
            let started = DispatchGroup()
            let finished = DispatchGroup()
            for thread in threads {
                started.enter()
                finished.enter()
                onNewThread {
                    started.leave()
                    thread.waitForGrant()
                    finished.leave()
                }
            }
            checks.expect(started.wait(timeout: deadline()) == .success)
            usleep(100_000)
            sampling.store(false, ordering: .relaxed)
            checks.expect(sampled.wait(timeout: deadline()) == .success)
            for thread in threads { thread.grant() }
            checks.expect(finished.wait(timeout: deadline()) == .success, "every waiter is granted")
            checks.expect(
                most.load(ordering: .relaxed) <= max(0, ParkedThread.watcherLimit),
                "at most \(ParkedThread.watcherLimit) watch at once, saw \(most.load(ordering: .relaxed))"
            )
        }
    }
}
