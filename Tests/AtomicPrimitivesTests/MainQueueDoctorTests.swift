import AtomicPrimitives
import ConcurrencyKitTesting
import Dispatch
import Foundation
import TestSupport
import Testing

/// The probe's patience runs on a `TestClock` that each test makes and moves itself: the tests use the real default
/// patience, two seconds, and wait for none of it.
@Suite("MainQueueDoctor", .timeLimit(.minutes(1)))
struct MainQueueDoctorTests {
    /// The default patience on Linux, which the probes of these tests keep.
    private static let patience = Duration.seconds(2)

    /// A probe over a queue of the test's own, timed by `clock`, whose reports are collected.
    private func makeProbe(
        target: DispatchQueue,
        patience: Duration? = MainQueueDoctorTests.patience,
        clock: TestClock = TestClock()
    ) -> (MainQueueProbe, AtomicBox<[String]>) {
        let reports = AtomicBox<[String]>([])
        let report: @Sendable (String) -> Void = { message in reports.mutate { $0.append(message) } }
        let probe = MainQueueProbe(target: { target }, patience: patience, clock: clock, report: report)
        return (probe, reports)
    }

    /// A queue that runs nothing else until `release` is called: busy with a block that waits for it.
    private func stuckQueue(_ label: String) -> (queue: DispatchQueue, release: @Sendable () async -> Void) {
        let stuck = DispatchQueue(label: label)
        let unblock = DispatchSemaphore(value: 0)
        stuck.async { hold(until: unblock) }
        return (
            stuck,
            {
                unblock.signal()
                await offPool { stuck.sync {} }  // drained before the queue is released
            }
        )
    }

    /// Moves `clock` to the end of the patience of the one watch that sleeps on it.
    private func endPatience(on clock: TestClock) async throws {
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        clock.advance(by: Self.patience)
    }

    @Test("a target nobody drains is reported once, not a nanosecond early, with the fixes named")
    func stuckTargetReportedOnce() async throws {
        let (stuck, release) = self.stuckQueue("test.doctor.stuck")
        let clock = TestClock()
        let (probe, reports) = self.makeProbe(target: stuck, clock: clock)
        probe.noteSend()
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        clock.advance(by: Self.patience - .nanoseconds(1))
        #expect(clock.deadlines.count == 1, "the watch still waits")
        #expect(reports.value.isEmpty)
        clock.advance(by: .nanoseconds(1))
        #expect(await suspendUntil { probe.isSettled }, "settled once the report has been made")
        for _ in 0..<100 { probe.noteSend() }
        #expect(clock.deadlines.isEmpty, "settled: no send starts a watch")
        #expect(reports.value.count == 1)
        let message = reports.value.first ?? ""
        #expect(message.contains("has not started after 2.0 seconds"), "the warning states the patience: \(message)")
        #expect(message.contains("dispatchMain()"))
        #expect(message.contains("RunLoop.main.run()"))
        #expect(message.contains("top-level await"))
        #expect(message.contains("blocked or busy"), "a program that drains main may block it")
        #expect(message.contains("MainQueueDoctor.patience = nil"))
        await release()
    }

    @Test(
        "a target blocked in a noted call of the package is reported with the call, its site and its async form",
        arguments: [false, true]
    )
    func blockedCallNamed(isInsideTask: Bool) async throws {
        let stuck = DispatchQueue(label: "test.doctor.blocked-call")
        let clock = TestClock()
        let (probe, reports) = self.makeProbe(target: stuck, clock: clock)
        let noted = DispatchSemaphore(value: 0)
        let unblock = DispatchSemaphore(value: 0)
        stuck.async {
            let call = MainQueueProbe.BlockedCall(
                api: "GCDGroup.wait()",
                alternative: "await group.waitForAll()",
                file: "App/main.swift",
                line: 7,
                isInsideTask: isInsideTask
            )
            let outer = probe.noteBlocked(in: call)
            noted.signal()
            hold(until: unblock)
            probe.noteBlocked(in: outer)
        }
        #expect(await waitOffPool(noted))
        probe.noteSend()
        try await self.endPatience(on: clock)
        #expect(await suspendUntil { probe.isSettled })
        unblock.signal()
        await offPool { stuck.sync {} }
        let message = reports.value.first ?? ""
        #expect(message.contains("the main queue is blocked in GCDGroup.wait(), called at App/main.swift:7"))
        #expect(message.contains("use await group.waitForAll() instead"), "the async form is named")
        #expect(
            message.contains(isInsideTask ? "The call runs in async code" : "Make the caller async"),
            "the advice fits where the call was made: \(message)"
        )
        #expect(!message.contains("dispatchMain()"), "the target is drained: no advice to drain it")
        #expect(message.contains("MainQueueDoctor.patience = nil"))
    }

    @Test("a blocked call is noted until it returns; one made inside another hands the note back when it returns")
    func blockedCallNotes() {
        let (probe, _) = self.makeProbe(target: DispatchQueue(label: "test.doctor.notes"))
        let outerCall = MainQueueProbe.BlockedCall(
            api: "Outer.wait()",
            alternative: "await outer.waitForAll()",
            file: "App/main.swift",
            line: 1,
            isInsideTask: false
        )
        let innerCall = MainQueueProbe.BlockedCall(
            api: "Inner.wait()",
            alternative: "await inner.waitForAll()",
            file: "App/main.swift",
            line: 2,
            isInsideTask: false
        )
        #expect(probe.blockedCall == nil)
        let beforeOuter = probe.noteBlocked(in: outerCall)
        let beforeInner = probe.noteBlocked(in: innerCall)
        #expect(probe.blockedCall.map { "\($0.api)" } == "Inner.wait()")
        probe.noteBlocked(in: beforeInner)
        #expect(probe.blockedCall.map { "\($0.api)" } == "Outer.wait()")
        probe.noteBlocked(in: beforeOuter)
        #expect(probe.blockedCall == nil)
        #expect(beforeOuter == nil)
    }

    @Test("a drained target settles the probe; its watch's timer then comes and finds it settled: no report")
    func drainedTargetSettles() async throws {
        let drained = DispatchQueue(label: "test.doctor.drained")
        let clock = TestClock()
        let (probe, reports) = self.makeProbe(target: drained, clock: clock)
        probe.noteSend()
        #expect(await suspendUntil { probe.isSettled })
        await offPool { drained.sync {} }  // the marker has run: the queue is released with nothing pending
        try await self.endPatience(on: clock)
        #expect(await suspendUntil { probe.patienceEnds == 1 }, "the watch's timer has come")
        #expect(reports.value.isEmpty)
        #expect(probe.isWatching == false, "a settled probe no longer watches sends")
        #expect(probe.mayReport == false, "nor notes blocking calls")
    }

    @Test("with patience nil the probe is off: sends start no watch")
    func offDoesNothing() {
        let target = DispatchQueue(label: "test.doctor.off")
        let (probe, reports) = self.makeProbe(target: target, patience: nil)
        probe.noteSend()
        #expect(probe.isWatching == false)
        #expect(probe.mayReport == false, "off: blocking calls note nothing")
        #expect(probe.isSettled == false)
        #expect(reports.value.isEmpty)
    }

    @Test("switching the probe off ends a running watch without a report; switching it on again watches anew")
    func offDuringWatch() async throws {
        let (stuck, release) = self.stuckQueue("test.doctor.off-during-watch")
        let clock = TestClock()
        let (probe, reports) = self.makeProbe(target: stuck, clock: clock)
        probe.noteSend()
        #expect(probe.hasWatchRunning)
        probe.patience = nil
        try await self.endPatience(on: clock)
        #expect(await suspendUntil { !probe.hasWatchRunning }, "the watch ends when its patience runs out")
        #expect(reports.value.isEmpty)
        #expect(probe.isSettled == false)
        probe.patience = Self.patience
        #expect(probe.isWatching, "on again, and watching nothing: the next send starts a watch")
        probe.noteSend()
        try await self.endPatience(on: clock)
        #expect(await suspendUntil { probe.isSettled })
        #expect(reports.value.count == 1)
        #expect(probe.patienceEnds == 2)
        await release()
    }

    @Test("a probe made off starts watching once it gets a patience, and stops when it loses it")
    func offAndOn() async throws {
        let drained = DispatchQueue(label: "test.doctor.off-and-on")
        let clock = TestClock()
        let (probe, reports) = self.makeProbe(target: drained, patience: nil, clock: clock)
        #expect(probe.isWatching == false)
        probe.patience = .milliseconds(30)
        #expect(probe.patience == .milliseconds(30))
        #expect(probe.isWatching)
        probe.patience = nil
        #expect(probe.isWatching == false)
        probe.noteSend()
        await offPool { drained.sync {} }
        #expect(probe.isSettled == false, "off: the send sent no marker")
        probe.patience = Self.patience
        probe.noteSend()
        #expect(await suspendUntil { probe.isSettled })
        probe.patience = nil
        probe.patience = Self.patience
        #expect(probe.isWatching == false, "settled stays settled, whatever the patience")
        await offPool { drained.sync {} }
        try await self.endPatience(on: clock)  // the one watch's timer comes, and finds the probe settled
        #expect(await suspendUntil { probe.patienceEnds == 1 })
        #expect(reports.value.isEmpty)
    }

    @Test("the first send to another queue sends a marker: a drained target settles the probe, nothing sent to it")
    func sendElsewhereSettles() async throws {
        try await offPoolTest { checks in
            let drained = DispatchQueue(label: "test.doctor.elsewhere-drained")
            let (probe, reports) = self.makeProbe(target: drained)
            checks.expect(probe.isWatching)
            probe.noteSendElsewhere()
            checks.expect(eventually { probe.isSettled })
            checks.expect(probe.isWatching == false, "settled: every send is one load")
            drained.sync {}
            checks.expect(reports.value.isEmpty)
        }
    }

    @Test("a send to another queue starts no watch: with the target stuck, nothing is reported until a send to it")
    func sendElsewhereStartsNoWatch() async throws {
        let (stuck, release) = self.stuckQueue("test.doctor.elsewhere-stuck")
        let clock = TestClock()
        let (probe, reports) = self.makeProbe(target: stuck, clock: clock)
        for _ in 0..<3 { probe.noteSendElsewhere() }
        #expect(probe.hasWatchRunning == false)
        #expect(probe.isSettled == false)
        #expect(probe.isWatching, "a send to the target would still start a watch")
        probe.noteSend()
        try await self.endPatience(on: clock)
        #expect(await suspendUntil { probe.isSettled })
        #expect(reports.value.count == 1)
        await release()
    }

    @Test("a program that drains main and sends nothing to it settles the doctor, silently")
    func programThatSendsNothingToMainSettles() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            MainQueueDoctor.patience = .milliseconds(50)
            let queue = DispatchQueue(label: "test.doctor.elsewhere")
            for _ in 0..<10 { MainQueueDoctor.noteSend(to: queue) }
            // Main is drained in this process: the empty block the doctor sent it runs.
            let limit = deadline()
            while !MainQueueDoctor.probe.isSettled && DispatchTime.now() < limit { usleep(1_000) }
            guard MainQueueDoctor.probe.isSettled else { exit(1) }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(!stderr.contains("ConcurrencyKit:"), "the child's standard error was: \(stderr)")
    }

    @Test("patience must be nil or more than zero: the setter traps with a message")
    func badPatienceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            MainQueueDoctor.patience = .zero
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("MainQueueDoctor.patience must be nil or more than zero"))
    }

    @Test("a block sent to a main queue that nobody drains prints the warning to standard error, once")
    func warnsOnStandardError() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            MainQueueDoctor.patience = .milliseconds(50)
            // Keep the main queue from being drained: it is busy with a block until the doctor has spoken.
            let spoken = DispatchSemaphore(value: 0)
            DispatchQueue.main.async { _ = spoken.wait(timeout: deadline()) }
            DispatchQueue.main.async {}
            MainQueueDoctor.noteSendToMain()
            MainQueueDoctor.noteSendToMain()
            let limit = deadline()
            while !MainQueueDoctor.probe.isSettled && DispatchTime.now() < limit { usleep(1_000) }
            spoken.signal()
        }
        let output = text(result?.standardErrorContent)
        #expect(output.components(separatedBy: "ConcurrencyKit: a block sent to the main queue").count == 2)
        #expect(!output.contains("the main queue is blocked in"), "main waits in no call of ConcurrencyKit: \(output)")
    }

    #if !canImport(Darwin)
    @Test("on Linux the doctor is on, with two seconds of patience, and can be switched off")
    func linuxDefault() async {
        await #expect(processExitsWith: .success) {
            guard MainQueueDoctor.patience == .seconds(2) else { exit(1) }
            MainQueueDoctor.patience = nil
            guard MainQueueDoctor.patience == nil else { exit(2) }
        }
    }
    #endif
}
