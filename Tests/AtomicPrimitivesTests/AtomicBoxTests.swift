import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

@Suite("AtomicBox", .timeLimit(.minutes(1)))
struct AtomicBoxTests {
    @Test("value reads what mutate wrote, and mutate returns its body's result")
    func valueAndMutate() {
        let box = AtomicBox([1, 2])
        let count = box.mutate { values -> Int in
            values.append(3)
            return values.count
        }
        #expect(count == 3)
        #expect(box.value == [1, 2, 3])
    }

    @Test("mutate loses no update with one thread per core incrementing")
    func noLostUpdates() async throws {
        try await offPoolTest { checks in
            let box = AtomicBox(0)
            let perThread = 20_000
            let finished = runOnThreads(contendingThreads) { _ in
                for _ in 0..<perThread {
                    box.mutate { $0 += 1 }
                }
            }
            checks.expect(finished)
            checks.expect(box.value == contendingThreads * perThread)
        }
    }

    @Test("a read on another thread waits until mutate has finished")
    func readWaitsForMutate() async throws {
        try await offPoolTest { checks in
            let box = AtomicBox("before")
            let inside = DispatchSemaphore(value: 0)
            let proceed = DispatchSemaphore(value: 0)
            let read = AtomicBox<String?>(nil)
            let readDone = DispatchSemaphore(value: 0)
            onNewThread {
                box.mutate { value in
                    inside.signal()
                    hold(until: proceed)
                    value = "after"
                }
            }
            checks.expect(inside.wait(timeout: deadline()) == .success)
            onNewThread {
                let seen = box.value
                read.mutate { $0 = seen }
                readDone.signal()
            }
            checks.expect(readDone.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
            proceed.signal()
            checks.expect(readDone.wait(timeout: deadline()) == .success)
            checks.expect(read.value == "after")
        }
    }

    @Test("isMutating is true exactly while someone holds the box")
    func isMutating() async throws {
        try await offPoolTest { checks in
            let box = AtomicBox(0)
            checks.expect(box.isMutating == false)
            box.mutate { _ in checks.expect(box.isMutating, "asked from inside its own mutate") }
            checks.expect(box.isMutating == false)

            let inside = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let left = DispatchSemaphore(value: 0)
            onNewThread {
                box.mutate { _ in
                    inside.signal()
                    hold(until: release)
                }
                left.signal()
            }
            checks.expect(inside.wait(timeout: deadline()) == .success)
            checks.expect(box.isMutating, "asked from another thread while held")
            release.signal()
            checks.expect(left.wait(timeout: deadline()) == .success)
            checks.expect(box.isMutating == false)
        }
    }

    @Test("a throwing mutate keeps earlier changes and releases the box")
    func throwingMutate() {
        struct Boom: Error {}
        let box = AtomicBox(1)
        #expect(throws: Boom.self) {
            try box.mutate { value in
                value = 2
                throw Boom()
            }
        }
        #expect(box.value == 2)
        #expect(box.isMutating == false)
    }

    @Test("mutate from inside mutate traps with a message naming AtomicBox")
    func nestedMutateTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let box = AtomicBox(0)
            box.mutate { _ in box.mutate { $0 += 1 } }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("AtomicBox<Int>"))
    }

    @Test("reading value from inside mutate traps before touching the value")
    func valueInsideMutateTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let box = AtomicBox(0)
            box.mutate { _ in _ = box.value }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("AtomicBox"))
    }
}
