import AtomicPrimitives
import Dispatch
import Foundation
import TestSupport
import Testing

@testable import DispatchKit

@Suite("RawQueue: sync through dispatch_sync_f", .timeLimit(.minutes(1)))
struct RawQueueTests {
    @Test("on Linux the overlay keeps the queue where RawQueue reads it, so sync skips the overlay's block")
    func readsTheQueue() {
        #if os(Linux)
        // A new overlay or toolchain that moves the queue would leave every sync on the slow path, silently.
        #expect(RawQueue(DispatchQueue(label: "test.rawqueue.layout")) != nil)
        #expect(RawQueue(DispatchQueue.main) != nil)
        #expect(RawQueue(DispatchQueue.global()) != nil)
        #endif
    }

    @Test("the block runs inside the queue it was sent to, as Dispatch reports it, and returns before sync does")
    func runsInTheQueue() throws {
        let key = DispatchSpecificKey<Int>()
        let queue = DispatchQueue(label: "test.rawqueue.inside")
        queue.setSpecific(key: key, value: 7)
        let raw = try #require(RawQueue(queue), "the layout check passed in the test above")
        var seen: Int?
        raw.sync(barrier: false) { seen = DispatchQueue.getSpecific(key: key) }
        #expect(seen == 7)
        raw.sync(barrier: true) { seen = DispatchQueue.getSpecific(key: key).map { $0 + 1 } }
        #expect(seen == 8)
    }

    @Test("syncs onto one serial queue from several threads run in it, never overlap, and none is lost")
    func serialExclusion() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.rawqueue.serial")
            let detector = OverlapDetector()
            let outside = AtomicBox(0)
            let threads = 4
            let rounds = 5_000
            let done = DispatchSemaphore(value: 0)
            for _ in 0..<threads {
                onNewThread {
                    for _ in 0..<rounds {
                        queue.sync {
                            detector.section { stayAWhile(detector) }
                            if !queue.isCurrent { outside.mutate { $0 += 1 } }
                        }
                    }
                    done.signal()
                }
            }
            for _ in 0..<threads { checks.expect(done.wait(timeout: deadline()) == .success) }
            checks.expect(detector.overlaps == 0, "two blocks of a serial queue ran at once")
            checks.expect(outside.value == 0, "a block ran outside the queue")
            checks.expect(queue.sync { detector.count } == threads * rounds)
        }
    }

    @Test("barrierSync onto a concurrent queue runs alone while plain syncs run beside each other")
    func barrierExclusion() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.rawqueue.concurrent", kind: .concurrent)
            let readers = AtomicBox(0)
            let overlaps = AtomicBox(0)
            let threads = 4
            let rounds = 2_000
            let done = DispatchSemaphore(value: 0)
            for thread in 0..<threads {
                onNewThread {
                    for round in 0..<rounds {
                        if (thread + round) % 5 == 0 {
                            queue.barrierSync {
                                for _ in 0..<20 where readers.value != 0 { overlaps.mutate { $0 += 1 } }
                            }
                        } else {
                            queue.sync {
                                readers.mutate { $0 += 1 }
                                for _ in 0..<20 { _ = readers.value }
                                readers.mutate { $0 -= 1 }
                            }
                        }
                    }
                    done.signal()
                }
            }
            for _ in 0..<threads { checks.expect(done.wait(timeout: deadline()) == .success) }
            checks.expect(overlaps.value == 0, "a barrier ran while a plain sync was inside the queue")
        }
    }
}

/// Keeps the block inside its section for a few atomic loads, so that a block that overlaps it is seen.
private func stayAWhile(_ detector: OverlapDetector) {
    for _ in 0..<20 { _ = detector.isInside }
}
