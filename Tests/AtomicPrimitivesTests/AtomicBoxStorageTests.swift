import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

/// A value whose deinit the probe counts, with bytes around it that a wrong offset into the box's block would overlap.
private struct Padded: Sendable {
    var before: (UInt64, UInt64, UInt64) = (1, 2, 3)
    let tracked: LifetimeProbe.Tracked
    var after: (UInt64, UInt64, UInt64) = (4, 5, 6)
}

/// AtomicBox keeps its value in one heap block with its lock: exclusion, the value's lifetime, re-entry traps and the
/// lock-order checker all have to hold with that storage.
@Suite("AtomicBox storage", .timeLimit(.minutes(2)))
struct AtomicBoxStorageTests {
    @Test(
        "mutate excludes every other access at 8 and 16 threads: a read-yield-write counter ends exact",
        arguments: [8, 16]
    )
    func exclusionAtManyThreads(threads: Int) async throws {
        try await offPoolTest { checks in
            let box = AtomicBox(0)
            let overlaps = OverlapDetector()
            let perThread = 2_000
            let finished = runOnThreads(threads) { _ in
                for index in 0..<perThread {
                    box.mutate { count in
                        overlaps.section {
                            // Read, maybe let another thread run, write: a lock that lets two in loses updates.
                            let seen = count
                            if index % 64 == 0 { yieldProcessor() }
                            count = seen + 1
                        }
                    }
                }
            }
            checks.expect(finished)
            checks.expect(box.value == threads * perThread, "\(box.value) of \(threads * perThread)")
            checks.expect(overlaps.overlaps == 0, "\(overlaps.overlaps) overlapping closures")
        }
    }

    @Test("values of every size and alignment read back what was stored, beside the lock in one block")
    func payloadLayouts() {
        let small = AtomicBox(UInt8(7))
        let wide = AtomicBox(SIMD16<Float>(repeating: 2.5))
        let text = AtomicBox(String(repeating: "x", count: 100))
        let tuple = AtomicBox((a: UInt8(1), b: UInt64.max, c: UInt16(3)))
        small.mutate { $0 &+= 1 }
        wide.mutate { $0[15] = 9 }
        text.mutate { $0 += "y" }
        tuple.mutate { $0.a = 2 }
        #expect(small.value == 8)
        #expect(wide.value[0] == 2.5 && wide.value[15] == 9)
        #expect(text.value.count == 101)
        #expect(tuple.value == (2, UInt64.max, 3))
        #expect(!small.isMutating && !wide.isMutating && !text.isMutating && !tuple.isMutating)
    }

    @Test("the value is released when the box is, and a replaced value at once")
    func valueReleasedWithBox() {
        let probe = LifetimeProbe()
        do {
            let box = AtomicBox(Padded(tracked: probe.make()))
            #expect(probe.alive == 1)
            box.mutate { $0 = Padded(tracked: probe.make()) }
            #expect(probe.alive == 1, "the replaced value is released")
            #expect(box.value.before == (1, 2, 3) && box.value.after == (4, 5, 6))
            #expect(box.value.tracked.index == 2)
        }
        #expect(probe.alive == 0, "\(probe.alive) values outlived their box")
        do {
            let named = AtomicBox([probe.make(), probe.make()], name: "storage-released")
            #expect(named.value.count == 2)
        }
        #expect(probe.alive == 0, "\(probe.alive) values outlived their named box")
    }

    @Test("a box whose last reference a closure's thread drops as its mutate returns releases the value there")
    func boxReleasedByAnotherThread() async throws {
        try await offPoolTest { checks in
            let probe = LifetimeProbe()
            for _ in 0..<200 {
                let box = AtomicBox(Padded(tracked: probe.make()))
                let inside = DispatchSemaphore(value: 0)
                let proceed = DispatchSemaphore(value: 0)
                let done = DispatchSemaphore(value: 0)
                // The other thread holds the only other reference; the test drops its own while the closure runs.
                onNewThread { [box] in
                    box.mutate { value in
                        inside.signal()
                        hold(until: proceed)
                        value = Padded(tracked: probe.make())
                    }
                    done.signal()
                }
                checks.expect(inside.wait(timeout: deadline()) == .success)
                _ = consume box
                proceed.signal()
                checks.expect(done.wait(timeout: deadline()) == .success)
            }
            checks.expect(probe.allReleased(), "\(probe.alive) values outlived their boxes")
        }
    }

    @Test(
        "a box's lock joins the lock-order checker: two boxes nested both ways are reported, naming both",
        .debugBuildsOnly("the lock-order checker")
    )
    func lockOrderSeesBoxes() async throws {
        try await offPoolTest { checks in
            let first = AtomicBox(0, name: "storage-order-A")
            let second = AtomicBox(0, name: "storage-order-B")
            let found = DiagnosticReports.capture(where: { $0.message.contains("storage-order-") }) {
                checks.expect(runOnThreads(1) { _ in first.mutate { _ in second.mutate { $0 += 1 } } })
                checks.expect(runOnThreads(1) { _ in second.mutate { _ in first.mutate { $0 += 1 } } })
            }.reports
            try checks.require(found.count == 1)
            checks.expect(found[0].kind == .lockOrderCycle)
            let message = found[0].message
            checks.expect(message.contains("\"storage-order-A\" (AtomicBox<Int> made at"), "\(message)")
            checks.expect(message.contains("\"storage-order-B\" (AtomicBox<Int> made at"), "\(message)")
        }
    }

    @Test(
        "reading a wide value from inside its own mutate traps naming the box, and never returns a value"
    )
    func reentryTrapsWithWideValue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LockOrderChecking.mode = .warn
            let box = AtomicBox(SIMD16<Float>(repeating: 1), name: "wide")
            box.mutate(file: "App/Wide.swift", line: 3) { _ in
                print(box.value)
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("AtomicBox<SIMD16<Float>> \"wide\" (made at"), "\(stderr)")
        #expect(stderr.contains("taken on this thread at App/Wide.swift:3"), "\(stderr)")
    }
}
