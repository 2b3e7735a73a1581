import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

/// Runs `body` on a new thread and waits for it: each order of a test happens on a thread of its own.
private func onThread(_ body: @escaping @Sendable () -> Void) {
    #expect(runOnThreads(1) { _ in body() })
}

/// Captures the reports that name `tag`, the test's own prefix for its lock names.
private func reports(naming tag: String, _ body: () -> Void) -> [DiagnosticReport] {
    DiagnosticReports.capture(where: { $0.message.contains(tag) }, body).reports
}

// The checks this suite tests exist in debug builds only.
#if DEBUG
@Suite("Lock-order checker", .timeLimit(.minutes(1)))
struct LockOrderCheckerTests {
    @Test("an inversion on two threads at different times is reported once, naming both locks and all four sites")
    func twoLockInversion() async throws {
        try await offPoolTest { checks in
            let a = MutexLock(name: "inversion-A")
            let b = MutexLock(name: "inversion-B")
            let outerAB = #line + 3
            let innerAB = #line + 3
            let firstOrder: @Sendable () -> Void = {
                a.withLock {
                    b.withLock {}
                }
            }
            let outerBA = #line + 3
            let innerBA = #line + 3
            let secondOrder: @Sendable () -> Void = {
                b.withLock {
                    a.withLock {}
                }
            }
            let found = reports(naming: "inversion-") {
                onThread(firstOrder)
                onThread(secondOrder)
                onThread(secondOrder)
                onThread(firstOrder)
            }
            try checks.require(found.count == 1)
            let report = found[0]
            checks.expect(report.kind == .lockOrderCycle)
            checks.expect(
                report.message.contains("\"inversion-A\" (MutexLock made at AtomicPrimitivesTests/LockOrderChecker")
            )
            checks.expect(report.message.contains("\"inversion-B\" (MutexLock made at"))
            let file = "AtomicPrimitivesTests/LockOrderCheckerTests.swift"
            let sites = [outerBA, innerBA, outerAB, innerAB].map { "\(file):\($0)" }
            checks.expect(report.sites == sites)
        }
    }

    @Test("a cycle through three locks is reported when its last edge is attempted")
    func threeLockCycle() async throws {
        try await offPoolTest { checks in
            let a = MutexLock(name: "three-A")
            let b = AtomicBox(0, name: "three-B")
            let c = MutexLock(name: "three-C")
            let found = reports(naming: "three-") {
                onThread { a.withLock { b.mutate { $0 += 1 } } }
                onThread { b.mutate { _ in c.withLock {} } }
                onThread { c.withLock { a.withLock {} } }
            }
            try checks.require(found.count == 1)
            checks.expect(found[0].message.contains("cycle of 3 locks"))
            for name in ["three-A", "three-B", "three-C"] {
                checks.expect(found[0].message.contains("\"\(name)\""))
            }
            checks.expect(found[0].message.contains("AtomicBox<Int>"))
        }
    }

    @Test("locks always taken in one order are never reported, from any number of threads")
    func consistentOrder() async throws {
        try await offPoolTest { checks in
            let a = MutexLock(name: "consistent-A")
            let b = AtomicBox(0, name: "consistent-B")
            let c = MutexLock(name: "consistent-C")
            let found = reports(naming: "consistent-") {
                checks.expect(
                    runOnThreads(contendingThreads) { _ in
                        for _ in 0..<200 {
                            a.withLock { b.mutate { _ in c.withLock {} } }
                            a.withLock { c.withLock {} }
                            b.mutate { _ in c.withLock {} }
                        }
                    }
                )
            }
            checks.expect(found.isEmpty)
        }
    }

    @Test("a try-lock adds no edge, but a lock taken by try-lock counts as held")
    func tryLockAddsNoEdge() async throws {
        try await offPoolTest { checks in
            let a = MutexLock(name: "trylock-A")
            let b = MutexLock(name: "trylock-B")
            let quiet = reports(naming: "trylock-") {
                onThread {
                    a.withLock {
                        checks.expect(b.tryLock())
                        b.unlock()
                    }
                }
                onThread { b.withLock { a.withLock {} } }
            }
            checks.expect(quiet.isEmpty, "a then try-lock b, and b then a, cannot deadlock")

            let c = MutexLock(name: "heldtry-C")
            let d = MutexLock(name: "heldtry-D")
            let found = reports(naming: "heldtry-") {
                onThread {
                    checks.expect(c.tryLock())
                    d.withLock {}
                    c.unlock()
                }
                onThread { d.withLock { c.withLock {} } }
            }
            checks.expect(found.count == 1, "c held by try-lock, then d; and d then c: a cycle")
        }
    }

    @Test("locks may be released in any order, and a released lock orders nothing taken after it")
    func releaseInAnyOrder() async throws {
        try await offPoolTest { checks in
            let a = MutexLock(name: "anyorder-A")
            let b = MutexLock(name: "anyorder-B")
            let c = MutexLock(name: "anyorder-C")
            let found = reports(naming: "anyorder-") {
                onThread {
                    a.lock()
                    b.lock()
                    a.unlock()  // b stays held, a does not
                    c.withLock {}
                    b.unlock()
                }
                onThread { c.withLock { a.withLock {} } }
            }
            // a was released before c was taken: no a → c edge. c → a closes the cycle a → b → c → a, not an inversion.
            try checks.require(found.count == 1)
            checks.expect(found[0].message.contains("cycle of 3 locks"))
        }
    }

    @Test("a destroyed lock leaves the graph, and a new lock at its address has no history")
    func destroyedLocksLeaveTheGraph() {
        var serials: [UInt64] = []
        let found = reports(naming: "reuse-") {
            for _ in 0..<200 {
                let a = MutexLock(name: "reuse-A")
                let b = MutexLock(name: "reuse-B")
                a.withLock { b.withLock {} }
                serials.append(a.lockOrderSerial)
                #expect(LockOrderChecker.graphContains(serial: a.lockOrderSerial))
            }
            for _ in 0..<200 {
                let a = MutexLock(name: "reuse-A")
                let b = MutexLock(name: "reuse-B")
                b.withLock { a.withLock {} }
            }
        }
        #expect(found.isEmpty)
        #expect(serials.allSatisfy { !LockOrderChecker.graphContains(serial: $0) })
    }

    @Test("two locks of one peer class held at once are reported, though no other order was ever seen")
    func peerClassNesting() async throws {
        try await offPoolTest { checks in
            let deliveries = LockOrderPeerClass(name: "peer-test delivery lock")
            let first = MutexLock(name: "peer-1", peers: deliveries)
            let second = MutexLock(name: "peer-2", peers: deliveries)
            let third = MutexLock(name: "peer-3", peers: deliveries)
            let found = reports(naming: "peer-") {
                onThread { first.withLock {} }
                onThread { second.withLock {} }
                onThread { first.withLock { second.withLock {} } }
                onThread { third.withLock { first.withLock {} } }
            }
            let peers = found.filter { $0.kind == .unorderedPeers }
            try checks.require(peers.count == 1, "reported once per class")
            checks.expect(peers[0].message.contains("two peer-test delivery locks held at once"))
            checks.expect(peers[0].message.contains("\"peer-1\"") && peers[0].message.contains("\"peer-2\""))
        }
    }

    @Test("resources that are not locks join through willAcquire, didAcquire and didRelease")
    func packageHooks() async throws {
        try await offPoolTest { checks in
            let turn = LockOrderIdentity(name: "hooks-turn", type: Int.self)
            let queue = LockOrderIdentity(name: "hooks-queue", type: String.self)
            let found = reports(naming: "hooks-") {
                LockOrderChecker.willAcquire(turn)
                LockOrderChecker.didAcquire(turn)
                checks.expect(LockOrderChecker.isHeld(turn))
                LockOrderChecker.willAcquire(queue)
                LockOrderChecker.didAcquire(queue)
                LockOrderChecker.didRelease(turn)
                LockOrderChecker.didRelease(queue)
                checks.expect(!LockOrderChecker.isHeld(turn))
                onThread {
                    LockOrderChecker.willAcquire(queue)
                    LockOrderChecker.didAcquire(queue)
                    LockOrderChecker.willAcquire(turn)
                    LockOrderChecker.didAcquire(turn)
                    LockOrderChecker.didRelease(turn)
                    LockOrderChecker.didRelease(queue)
                }
            }
            try checks.require(found.count == 1)
            checks.expect(
                found[0].message.contains("\"hooks-turn\" (Int made at AtomicPrimitivesTests/LockOrderCheckerTests")
            )
            let serial = queue.serial
            checks.expect(LockOrderChecker.graphContains(serial: serial))
        }
    }

    @Test("a lock released while held leaves no trace that reports later acquisitions")
    func lockReleasedWhileHeld() async throws {
        try await offPoolTest { checks in
            let kept = MutexLock(name: "dropped-kept")
            let found = reports(naming: "dropped-") {
                onThread {
                    do {
                        let dropped = MutexLock(name: "dropped-gone")
                        dropped.lock()
                    }
                    kept.withLock {}
                }
            }
            checks.expect(found.isEmpty)
        }
    }

    @Test("a lock destroyed on one thread while another holds it leaves the holder able to lock and report")
    func lockDestroyedWhileAnotherThreadHoldsIt() async throws {
        try await offPoolTest { checks in
            let kept = MutexLock(name: "foreign-kept")
            let other = MutexLock(name: "foreign-other")
            let held = DispatchSemaphore(value: 0)
            let destroyed = DispatchSemaphore(value: 0)
            let box = AtomicBox<MutexLock?>(MutexLock(name: "foreign-gone"))
            let found = reports(naming: "foreign-") {
                checks.expect(
                    runOnThreads(2) { index in
                        if index == 0 {
                            box.value?.lock()
                            held.signal()
                            hold(until: destroyed)
                            kept.withLock { other.withLock {} }
                        } else {
                            _ = held.wait(timeout: deadline())
                            box.mutate { $0 = nil }
                            destroyed.signal()
                        }
                    }
                )
                onThread { other.withLock { kept.withLock {} } }
            }
            checks.expect(found.count == 1, "the holder's later locks are still checked")
            checks.expect(found.first?.message.contains("foreign-gone") == false)
        }
    }

    @Test("10,000 locks destroyed while another thread holds them leave the checker's records flat")
    func orphansDoNotAccumulate() async throws {
        try await offPoolTest { checks in
            // ThreadSanitizer counts each destroyed lock as still held by the holder, and stops past 128 held at
            // once: a few dozen there, 10,000 elsewhere.
            let rounds = runningUnderSanitizer ? 40 : 10_000
            let before = LockOrderChecker.orphanCount
            let box = AtomicBox<MutexLock?>(nil, name: "orphans-box")
            let other = MutexLock(name: "orphans-other")
            let ready = DispatchSemaphore(value: 0)
            let held = DispatchSemaphore(value: 0)
            let holderRecords = AtomicBox((peak: 0, after: -1))
            let found = reports(naming: "orphans-") {
                checks.expect(
                    runOnThreads(2) { index in
                        if index == 0 {
                            // The holder: locks each lock it is given, and never unlocks it.
                            for _ in 0..<rounds {
                                hold(until: ready)
                                box.value?.lock()
                                let records = LockOrderChecker.heldCount
                                holderRecords.mutate { $0.peak = max($0.peak, records) }
                                held.signal()
                            }
                            hold(until: ready)
                            other.withLock {}
                            let after = LockOrderChecker.heldCount
                            holderRecords.mutate { $0.after = after }
                        } else {
                            // The destroyer: makes each lock, and destroys it once the holder holds it.
                            for _ in 0..<rounds {
                                box.mutate { $0 = MutexLock(name: "orphans-lock") }
                                ready.signal()
                                hold(until: held)
                                var taken = box.mutate { $0.take() }
                                checks.expect(taken != nil)
                                taken = nil
                            }
                            ready.signal()
                        }
                    }
                )
            }
            checks.expect(found.isEmpty, "\(found.map(\.message))")
            let after = LockOrderChecker.orphanCount
            checks.expect(
                after <= before,
                "\(after - before) records of destroyed locks kept, for a holder that moved on"
            )
            let records = holderRecords.value
            checks.expect(records.peak == 1, "the holder's records held \(records.peak) locks at once")
            checks.expect(records.after == 0, "the holder's records still hold \(records.after) destroyed locks")
        }
    }

    @Test("a lock of a peer class destroyed while another thread holds it is not held by that thread any more")
    func orphanOfAPeerClassIsNotHeld() async throws {
        try await offPoolTest { checks in
            let deliveries = LockOrderPeerClass(name: "orphan-peer delivery lock")
            let next = MutexLock(name: "orphan-peer-next", peers: deliveries)
            let kept = MutexLock(name: "orphan-peer-kept")
            let box = AtomicBox<MutexLock?>(MutexLock(name: "orphan-peer-gone", peers: deliveries))
            let held = DispatchSemaphore(value: 0)
            let destroyed = DispatchSemaphore(value: 0)
            let found = reports(naming: "orphan-peer-") {
                checks.expect(
                    runOnThreads(2) { index in
                        if index == 0 {
                            box.value?.lock()
                            held.signal()
                            hold(until: destroyed)
                            // The destroyed lock was unlocked by its destruction: taking another of its class, and
                            // an order among the holder's live locks, is checked as on any thread.
                            next.withLock { kept.withLock {} }
                        } else {
                            hold(until: held)
                            box.mutate { $0 = nil }
                            destroyed.signal()
                        }
                    }
                )
                onThread { kept.withLock { next.withLock {} } }
            }
            checks.expect(found.filter { $0.kind == .unorderedPeers }.isEmpty, "\(found.map(\.message))")
            let messages = found.map(\.message)
            try checks.require(found.count == 1, "the inversion of the live locks is reported: \(messages)")
            checks.expect(
                found[0].message.contains("orphan-peer-next") && found[0].message.contains("orphan-peer-kept")
            )
            checks.expect(!found[0].message.contains("orphan-peer-gone"))
        }
    }

    @Test(
        "the mode names of CONCURRENCYKIT_LOCK_ORDER",
        arguments: [
            ("warn", LockOrderChecking.Mode.warn), ("TRAP", .trap), ("off", .off),
        ]
    )
    func modeNames(text: String, mode: LockOrderChecking.Mode) {
        #expect(LockOrderChecking.Mode(environmentValue: text) == mode)
    }

    @Test("other values of CONCURRENCYKIT_LOCK_ORDER are not modes")
    func badModeNames() {
        #expect(LockOrderChecking.Mode(environmentValue: "yes") == nil)
        #expect(LockOrderChecking.Mode(environmentValue: "") == nil)
    }

    @Test("trap mode set in code stops the process at an inversion, after writing the report")
    func trapModeInCode() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LockOrderChecking.mode = .trap
            let a = MutexLock(name: "trap-A")
            let b = MutexLock(name: "trap-B")
            a.withLock { b.withLock {} }
            b.withLock { a.withLock {} }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("lock-order inversion: \"trap-B\" and \"trap-A\" are taken in both orders"))
        #expect(stderr.contains("LockOrderChecking.mode is trap"))
    }

    @Test("CONCURRENCYKIT_LOCK_ORDER=trap sets trap mode")
    func trapModeFromEnvironment() async {
        await #expect(processExitsWith: .failure) {
            CLibrary.setEnvironmentValue(LockOrderChecking.environmentVariable, "trap")
            LockOrderChecking.reloadModeFromEnvironment()
            #expect(LockOrderChecking.mode == .trap)
            let a = MutexLock()
            let b = MutexLock()
            a.withLock { b.withLock {} }
            b.withLock { a.withLock {} }
        }
    }

    @Test("CONCURRENCYKIT_LOCK_ORDER=off checks nothing, and warn writes the report and carries on")
    func offAndWarnFromEnvironment() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            CLibrary.setEnvironmentValue(LockOrderChecking.environmentVariable, "off")
            LockOrderChecking.reloadModeFromEnvironment()
            let a = MutexLock(name: "quiet-A")
            let b = MutexLock(name: "quiet-B")
            a.withLock { b.withLock {} }
            b.withLock { a.withLock {} }
            CLibrary.setEnvironmentValue(LockOrderChecking.environmentVariable, "warn")
            LockOrderChecking.reloadModeFromEnvironment()
            let c = MutexLock(name: "loud-C")
            let d = MutexLock(name: "loud-D")
            c.withLock { d.withLock {} }
            d.withLock { c.withLock {} }
            d.withLock { c.withLock {} }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(!stderr.contains("quiet-"))
        #expect(stderr.components(separatedBy: "\"loud-D\" and \"loud-C\" are taken in both orders").count == 2)
    }
}
#endif
