import AtomicPrimitives
import TestSupport
import Testing

/// A re-entry trap names the lock as the lock-order report does: its name, where it was made, and the line where the
/// calling thread took it, in every build (`make test` runs this suite in a release build too).
@Suite("Re-entry traps name the lock", .timeLimit(.minutes(2)))
struct ReentryTrapTests {
    @Test("a named MutexLock taken again on its thread traps naming the lock, where it was made and where it was taken")
    func mutexLockNamesItself() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LockOrderChecking.mode = .warn
            let lock = MutexLock(name: "cache")
            // An exit test's body has its `#line`s moved: name the site of the first acquisition explicitly.
            lock.withLock(file: "App/Cache.swift", line: 12) {
                lock.lock()
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("MutexLock \"cache\" (made at AtomicPrimitivesTests/ReentryTrapTests.swift:"))
        #expect(stderr.contains("taken on this thread at App/Cache.swift:12"), "\(stderr)")
        #expect(stderr.contains("was called on the thread that already holds this lock"), "\(stderr)")
    }

    @Test("a named AtomicBox used from inside its own mutate traps naming the box and where the mutate began")
    func atomicBoxNamesItself() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LockOrderChecking.mode = .warn
            let box = AtomicBox(0, name: "hits")
            box.mutate(file: "App/Hits.swift", line: 7) { _ in
                _ = box.value
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("AtomicBox<Int> \"hits\" (made at AtomicPrimitivesTests/ReentryTrapTests.swift:"))
        #expect(stderr.contains("taken on this thread at App/Hits.swift:7"), "\(stderr)")
        #expect(stderr.contains("from inside this box's own mutate closure"), "\(stderr)")
    }

    @Test("an unnamed MutexLock's trap names where it was made")
    func unnamedMutexLockNamesItsSite() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LockOrderChecking.mode = .warn
            let lock = MutexLock()
            lock.lock()
            lock.lock()
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("MutexLock (made at AtomicPrimitivesTests/ReentryTrapTests.swift:"), "\(stderr)")
    }
}
