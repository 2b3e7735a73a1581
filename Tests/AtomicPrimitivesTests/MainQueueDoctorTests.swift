import AtomicPrimitives
import Dispatch
import Foundation
import TestSupport
import Testing

@Suite("MainQueueDoctor", .timeLimit(.minutes(1)))
struct MainQueueDoctorTests {
    /// A probe over a queue of the test's own, whose reports are collected.
    private func makeProbe(
        target: DispatchQueue,
        patience: Duration? = .milliseconds(30)
    ) -> (MainQueueProbe, AtomicBox<[String]>, DispatchSemaphore) {
        let reports = AtomicBox<[String]>([])
        let reported = DispatchSemaphore(value: 0)
        let report: @Sendable (String) -> Void = { message in
            reports.mutate { $0.append(message) }
            reported.signal()
        }
        let probe = MainQueueProbe(target: { target }, patience: patience, report: report)
        return (probe, reports, reported)
    }

    @Test("a target nobody drains is reported once, with the fixes named, however many sends follow")
    func stuckTargetReportedOnce() async throws {
        try await offPoolTest { checks in
            // Stuck: busy with a block until the end of the test, then drained before the queue is released.
            let stuck = DispatchQueue(label: "test.doctor.stuck")
            let unblock = DispatchSemaphore(value: 0)
            stuck.async { _ = unblock.wait(timeout: deadline()) }
            defer {
                unblock.signal()
                stuck.sync {}
            }
            let (probe, reports, reported) = self.makeProbe(target: stuck)
            probe.noteSend()
            checks.expect(reported.wait(timeout: deadline()) == .success)
            for _ in 0..<100 { probe.noteSend() }
            checks.expect(eventually { probe.isSettled }, "settled once the report has been made")
            checks.expect(reports.value.count == 1)
            let message = reports.value.first ?? ""
            checks.expect(message.contains("dispatchMain()"))
            checks.expect(message.contains("RunLoop.main.run()"))
            checks.expect(message.contains("top-level await"))
            checks.expect(message.contains("blocked or busy"), "a program that drains main may block it")
            checks.expect(message.contains("MainQueueDoctor.patience = nil"))
        }
    }

    @Test(
        "a target blocked in a noted call of the package is reported with the call, its site and its async form",
        arguments: [false, true]
    )
    func blockedCallNamed(isInsideTask: Bool) async throws {
        try await offPoolTest { checks in
            let stuck = DispatchQueue(label: "test.doctor.blocked-call")
            let (probe, reports, reported) = self.makeProbe(target: stuck)
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
                _ = unblock.wait(timeout: deadline())
                probe.noteBlocked(in: outer)
            }
            defer {
                unblock.signal()
                stuck.sync {}
            }
            checks.expect(noted.wait(timeout: deadline()) == .success)
            probe.noteSend()
            checks.expect(reported.wait(timeout: deadline()) == .success)
            let message = reports.value.first ?? ""
            checks.expect(message.contains("the main queue is blocked in GCDGroup.wait(), called at App/main.swift:7"))
            checks.expect(message.contains("use await group.waitForAll() instead"), "the async form is named")
            checks.expect(
                message.contains(isInsideTask ? "The call runs in async code" : "Make the caller async"),
                "the advice fits where the call was made: \(message)"
            )
            checks.expect(!message.contains("dispatchMain()"), "the target is drained: no advice to drain it")
            checks.expect(message.contains("MainQueueDoctor.patience = nil"))
        }
    }

    @Test("a blocked call is noted until it returns; one made inside another hands the note back when it returns")
    func blockedCallNotes() {
        let (probe, _, _) = self.makeProbe(target: DispatchQueue(label: "test.doctor.notes"))
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

    @Test("a drained target settles the probe without a report")
    func drainedTargetSettles() async throws {
        try await offPoolTest { checks in
            let drained = DispatchQueue(label: "test.doctor.drained")
            let (probe, reports, reported) = self.makeProbe(target: drained)
            probe.noteSend()
            checks.expect(eventually { probe.isSettled })
            drained.sync {}  // the marker has run: the queue is released with nothing pending
            // The timer fires after the patience and finds the marker run: give it well past that to report wrongly.
            checks.expect(reported.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
            checks.expect(reports.value.isEmpty)
            checks.expect(probe.isWatching == false, "a settled probe no longer watches sends")
            checks.expect(probe.mayReport == false, "nor notes blocking calls")
        }
    }

    @Test("with patience nil the probe is off: sends start no watch")
    func offDoesNothing() {
        let target = DispatchQueue(label: "test.doctor.off")
        let (probe, reports, _) = self.makeProbe(target: target, patience: nil)
        probe.noteSend()
        #expect(probe.isWatching == false)
        #expect(probe.mayReport == false, "off: blocking calls note nothing")
        #expect(probe.isSettled == false)
        #expect(reports.value.isEmpty)
    }

    @Test("switching the probe off ends a running watch without a report; switching it on again watches anew")
    func offDuringWatch() async throws {
        try await offPoolTest { checks in
            let stuck = DispatchQueue(label: "test.doctor.off-during-watch")
            let unblock = DispatchSemaphore(value: 0)
            stuck.async { _ = unblock.wait(timeout: deadline()) }
            defer {
                unblock.signal()
                stuck.sync {}
            }
            let (probe, reports, reported) = self.makeProbe(target: stuck)
            probe.noteSend()
            checks.expect(probe.hasWatchRunning)
            probe.patience = nil
            // The watch's timer fires after 30 ms and finds the probe off.
            checks.expect(eventually { !probe.hasWatchRunning }, "the watch ends when its patience runs out")
            checks.expect(reports.value.isEmpty)
            checks.expect(probe.isSettled == false)
            probe.patience = .milliseconds(30)
            checks.expect(probe.isWatching, "on again, and watching nothing: the next send starts a watch")
            probe.noteSend()
            checks.expect(reported.wait(timeout: deadline()) == .success)
            checks.expect(eventually { probe.isSettled })
            checks.expect(reports.value.count == 1)
        }
    }

    @Test("a probe made off starts watching once it gets a patience, and stops when it loses it")
    func offAndOn() async throws {
        try await offPoolTest { checks in
            let drained = DispatchQueue(label: "test.doctor.off-and-on")
            let (probe, reports, _) = self.makeProbe(target: drained, patience: nil)
            checks.expect(probe.isWatching == false)
            probe.patience = .milliseconds(30)
            checks.expect(probe.patience == .milliseconds(30))
            checks.expect(probe.isWatching)
            probe.patience = nil
            checks.expect(probe.isWatching == false)
            probe.noteSend()
            drained.sync {}
            checks.expect(probe.isSettled == false, "off: the send sent no marker")
            probe.patience = .seconds(1)
            probe.noteSend()
            checks.expect(eventually { probe.isSettled })
            probe.patience = nil
            probe.patience = .seconds(1)
            checks.expect(probe.isWatching == false, "settled stays settled, whatever the patience")
            drained.sync {}
            checks.expect(reports.value.isEmpty)
        }
    }

    @Test("the first send to another queue sends a marker: a drained target settles the probe, nothing sent to it")
    func sendElsewhereSettles() async throws {
        try await offPoolTest { checks in
            let drained = DispatchQueue(label: "test.doctor.elsewhere-drained")
            let (probe, reports, _) = self.makeProbe(target: drained)
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
        try await offPoolTest { checks in
            let stuck = DispatchQueue(label: "test.doctor.elsewhere-stuck")
            let unblock = DispatchSemaphore(value: 0)
            stuck.async { _ = unblock.wait(timeout: deadline()) }
            defer {
                unblock.signal()
                stuck.sync {}
            }
            let (probe, reports, reported) = self.makeProbe(target: stuck)
            for _ in 0..<3 { probe.noteSendElsewhere() }
            checks.expect(probe.hasWatchRunning == false)
            checks.expect(probe.isSettled == false)
            checks.expect(probe.isWatching, "a send to the target would still start a watch")
            probe.noteSend()
            checks.expect(reported.wait(timeout: deadline()) == .success)
            checks.expect(eventually { probe.isSettled })
            checks.expect(reports.value.count == 1)
        }
    }

    @Test("a program that drains main and sends nothing to it settles the doctor, silently")
    func programThatSendsNothingToMainSettles() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            MainQueueDoctor.patience = .milliseconds(50)
            let queue = DispatchQueue(label: "test.doctor.elsewhere")
            for _ in 0..<10 { MainQueueDoctor.noteSend(to: queue) }
            // Main is drained in this process: the empty block the doctor sent it runs.
            let limit = DispatchTime.now() + 30
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
            DispatchQueue.main.async { _ = spoken.wait(timeout: .now() + 10) }
            DispatchQueue.main.async {}
            MainQueueDoctor.noteSendToMain()
            MainQueueDoctor.noteSendToMain()
            let limit = DispatchTime.now() + 10
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
