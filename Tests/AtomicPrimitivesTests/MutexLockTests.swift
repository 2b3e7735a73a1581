import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

@Suite("MutexLock", .timeLimit(.minutes(1)))
struct MutexLockTests {
    @Test("a second thread cannot take the lock until the holder releases it")
    func exclusion() async throws {
        try await offPoolTest { checks in
            let lock = MutexLock()
            let acquired = DispatchSemaphore(value: 0)
            lock.lock()
            onNewThread {
                lock.lock()
                acquired.signal()
                lock.unlock()
            }
            // The other thread is blocked on the lock: it cannot signal while we hold it.
            checks.expect(acquired.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
            lock.unlock()
            checks.expect(acquired.wait(timeout: deadline()) == .success)
        }
    }

    @Test("withLock loses no update with one thread per core incrementing")
    func noLostUpdates() async throws {
        try await offPoolTest { checks in
            let lock = MutexLock()
            nonisolated(unsafe) var counter = 0  // guarded by `lock`
            let perThread = 20_000
            let finished = runOnThreads(contendingThreads) { _ in
                for _ in 0..<perThread {
                    lock.withLock { counter += 1 }
                }
            }
            checks.expect(finished)
            checks.expect(lock.withLock { counter } == contendingThreads * perThread)
        }
    }

    @Test("every thread asleep on a held lock gets it in turn once the holder lets go: no wake-up is lost")
    func everySleeperWakes() async throws {
        try await offPoolTest { checks in
            // A name no other test uses, to find this lock's waits in the process-wide report.
            let name = "sleepers-\(UInt(bitPattern: ObjectIdentifier(checks)))"
            let lock = MutexLock(name: name)
            let sections = OverlapDetector()
            let sleepers = 4 * contendingThreads
            let finished = DispatchGroup()
            lock.lock()
            for _ in 0..<sleepers {
                finished.enter()
                onNewThread {
                    lock.withLock { sections.section {} }
                    finished.leave()
                }
            }
            // Every one of them has found the lock held and recorded its wait (nearly all are asleep on it by now), so
            // that each release must wake the next.
            let parked = waitReport { report in
                report.waits.count { $0.resource.name == name } == sleepers
            }
            checks.expect(parked != nil, "not all \(sleepers) threads parked on the lock")
            lock.unlock()
            // Within the stall limit, so that a lost wake-up fails here, before the suite's time limit.
            let woken = finished.wait(timeout: deadline(stallSeconds)) == .success
            guard checks.expect(woken, "a parked thread was never woken") else { return }
            checks.expect(sections.overlaps == 0)
            checks.expect(sections.count == sleepers)
            if checks.expect(lock.tryLock(), "the lock is free after the last sleeper released it") {
                lock.unlock()
            }
        }
    }

    @Test("withLock loses no update and never overlaps with four times as many threads as cores")
    func noLostUpdatesOversubscribed() async throws {
        try await offPoolTest { checks in
            let lock = MutexLock()
            let sections = OverlapDetector()
            let threads = 4 * contendingThreads
            let perThread = 5_000
            let finished = runOnThreads(threads, progress: { sections.progress }) { _ in
                for _ in 0..<perThread {
                    lock.withLock { sections.section {} }
                }
            }
            guard checks.expect(finished, "the hammer stalled") else { return }
            checks.expect(sections.overlaps == 0)
            checks.expect(lock.withLock { sections.count } == threads * perThread)
        }
    }

    @Test("tryLock fails while another thread holds the lock and succeeds once it is free")
    func tryLock() async throws {
        try await offPoolTest { checks in
            let lock = MutexLock()
            let held = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let released = DispatchSemaphore(value: 0)
            onNewThread {
                lock.lock()
                held.signal()
                hold(until: release)
                lock.unlock()
                released.signal()
            }
            checks.expect(held.wait(timeout: deadline()) == .success)
            checks.expect(lock.tryLock() == false)
            release.signal()
            checks.expect(released.wait(timeout: deadline()) == .success)
            checks.expect(lock.tryLock() == true)
            checks.expect(lock.tryLock() == false, "the holder's own tryLock fails rather than recursing")
            lock.unlock()
        }
    }

    @Test("withLock returns the body's result and releases the lock when the body throws")
    func withLockResultAndThrow() {
        struct Boom: Error {}
        let lock = MutexLock()
        #expect(lock.withLock { 41 + 1 } == 42)
        #expect(throws: Boom.self) {
            try lock.withLock { throw Boom() }
        }
        #expect(lock.tryLock(), "the lock was released after the throw")
        lock.unlock()
    }

    @Test("releasing a lock that is still held is safe")
    func releaseWhileHeld() {
        weak var weakLock: MutexLock?
        do {
            let lock = MutexLock()
            weakLock = lock
            lock.lock()
        }
        #expect(weakLock == nil)
    }

    @Test("locking again on the holding thread traps with a message naming MutexLock")
    func relockTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = MutexLock()
            lock.lock()
            lock.lock()
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("MutexLock"))
        #expect(stderr.contains("not recursive"))
    }

    @Test("withLock inside withLock traps instead of deadlocking")
    func nestedWithLockTraps() async {
        await #expect(processExitsWith: .failure) {
            let lock = MutexLock()
            lock.withLock { lock.withLock {} }
        }
    }

    @Test("unlocking a lock the thread does not hold traps")
    func foreignUnlockTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            MutexLock().unlock()
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("does not hold"))
    }
}
