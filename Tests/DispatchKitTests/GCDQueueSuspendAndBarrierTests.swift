import AtomicPrimitives
import Dispatch
import DispatchKit
import Foundation
import TestSupport
import Testing

@Suite("GCDQueue: suspend, resume, barrierSync", .timeLimit(.minutes(1)))
struct GCDQueueSuspendAndBarrierTests {
    @Test("a suspended queue starts no block until resumed, and suspensions nest")
    func suspendHolds() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.suspend")
            let ran = DispatchSemaphore(value: 0)
            queue.suspend()
            queue.suspend()
            checks.expect(queue.isSuspended)
            queue.async { ran.signal() }
            checks.expect(ran.wait(timeout: .now() + .milliseconds(50)) == .timedOut)
            queue.resume()
            checks.expect(queue.isSuspended, "one suspend is left")
            checks.expect(ran.wait(timeout: .now() + .milliseconds(50)) == .timedOut)
            queue.resume()
            checks.expect(!queue.isSuspended)
            checks.expect(ran.wait(timeout: deadline()) == .success)
        }
    }

    @Test("copies of a GCDQueue share its suspension")
    func copiesShare() {
        let queue = GCDQueue(name: "test.suspend.copies")
        let copy = queue
        queue.suspend()
        #expect(copy.isSuspended)
        copy.resume()
        #expect(!queue.isSuspended)
    }

    @Test("releasing every copy of a suspended queue does not crash")
    func releaseWhileSuspended() async {
        await #expect(processExitsWith: .success) {
            do {
                let queue = GCDQueue(name: "test.suspend.release")
                queue.async {}
                queue.suspend()
            }
            // A suspended DispatchQueue released here would crash in libdispatch ("Release of a suspended object").
            // The queue is kept alive instead, by design, until a resume that never comes: leave without the leak
            // check of the AddressSanitizer pass, which would report that documented leak.
            _exit(0)
        }
    }

    @Test("resume() on a queue that is not suspended traps with a message naming the queue")
    func unbalancedResumeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            GCDQueue(name: "test.overresume").resume()
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("GCDQueue.resume: queue 'test.overresume' is not suspended"))
    }

    @Test("main and global queues cannot be suspended: the call traps with a message")
    func standardQueuesTrap() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            GCDQueue.utility.suspend()
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("GCDQueue.suspend"))
        #expect(stderr.contains("only a queue made by init(name:kind:) can be suspended"))
    }

    @Test("barrierSync on a concurrent queue waits for the blocks before it and runs alone, then returns its value")
    func barrierSyncRunsAlone() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.barriersync", kind: .concurrent)
            let inside = AtomicBox(0)
            let release = DispatchSemaphore(value: 0)
            let started = DispatchSemaphore(value: 0)
            for _ in 0..<2 {
                queue.async {
                    inside.mutate { $0 += 1 }
                    started.signal()
                    hold(until: release)
                    inside.mutate { $0 -= 1 }
                }
            }
            for _ in 0..<2 { checks.expect(started.wait(timeout: deadline()) == .success) }
            onNewThread {
                // Let the two readers go only after barrierSync has been called; it must wait for them.
                Thread.sleep(forTimeInterval: 0.02)
                release.signal()
                release.signal()
            }
            let seen = queue.barrierSync { inside.value }
            checks.expect(seen == 0, "the barrier ran after both earlier blocks had finished, alone")
            checks.expect(queue.barrierSync { 7 } == 7)
        }
    }

    @Test("barrierSync rethrows, and runs inline on a serial queue it is called from")
    func barrierSyncSerialAndThrows() async throws {
        try await offPoolTest { checks in
            struct Boom: Error {}
            let serial = GCDQueue(name: "test.barriersync.serial")
            checks.expect(serial.sync { serial.barrierSync { serial.isCurrent } })
            checks.expect(throws: Boom.self) { try serial.barrierSync { throw Boom() } }
            checks.expect(GCDQueue.utility.barrierSync { 1 } == 1, "no barrier on a global queue, and no hang")
        }
    }

    @Test("barrierSync from inside the same concurrent queue traps instead of deadlocking")
    func barrierSyncInsideTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            // The body blocks (syncs, waits): on a thread of its own, not on the exit test's task.
            await offPool {
                let queue = GCDQueue(name: "test.barrier.inside", kind: .concurrent)
                queue.sync { queue.barrierSync {} }
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("GCDQueue.barrierSync: called from inside concurrent queue 'test.barrier.inside'"))
    }
}
