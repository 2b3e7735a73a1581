import AtomicPrimitives
import ConcurrencyKitTesting
import Dispatch
import SafeValueCore
import TestSupport
import Testing

/// The values of these tests: the reports they capture name this type, and no other test's do.
private struct Ledger: Sendable {
    var entries = 0
}

/// A capture filter that accepts the reports about a `QueueSafeValue<Ledger>` whose `done` is overdue, and adds each
/// one to `found`.
///
/// The test reads `found`, not the capture's own list: that one gets the report just after the filter returns, so a
/// body that ends as soon as `found` has it could miss it.
private func overdueLedgerReports(into found: AtomicBox<[DiagnosticReport]>) -> @Sendable (DiagnosticReport) -> Bool {
    { report in
        guard report.kind == .manualCompletionOverdue, report.resources == ["QueueSafeValue<Ledger>"] else {
            return false
        }
        found.mutate { $0.append(report) }
        return true
    }
}

/// The doctor's patience, on a clock each test moves.
///
/// Each value's watch runs on a `TestClock` (the package's `QueueSafeValue(value:completionWatchClock:)`), with the
/// default patience of ten seconds: none of it passes in real time. The patience and the capture of reports are
/// global: these tests run one at a time, and put the patience back.
@Suite("ManualCompletionDoctor", .serialized, .timeLimit(.minutes(1)))
struct ManualCompletionDoctorTests {
    /// The default patience, which these tests keep but one.
    private static let patience = Duration.seconds(10)

    /// The site of a report about a command issued at `line` of this file.
    private func site(_ line: UInt) -> [String] {
        ["SafeValueCoreTests/ManualCompletionDoctorTests.swift:\(line)"]
    }

    @Test("an async command whose done is forgotten is reported after the patience, not a nanosecond early")
    func asyncForgottenDoneIsReported() async throws {
        #expect(ManualCompletionDoctor.patience == Self.patience)
        let clock = TestClock()
        let found = AtomicBox<[DiagnosticReport]>([])
        let line = try await DiagnosticReports.capture(where: overdueLedgerReports(into: found)) { () -> UInt in
            let value = QueueSafeValue(value: Ledger(), completionWatchClock: clock)
            let kept = AtomicBox<CommandCompletionClosure?>(nil)
            let queue = DispatchQueue(label: "test.doctor.async")
            let line: UInt = #line + 1
            value.async(performIn: queue).lowestPriority.set(manualCompletion: { ledger, done in
                ledger.entries += 1
                kept.mutate { $0 = done }  // returns without calling done
            })
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            clock.advance(by: Self.patience - .nanoseconds(1))
            #expect(clock.deadlines.count == 1, "the check still waits")
            #expect(found.value.isEmpty)
            clock.advance(by: .nanoseconds(1))
            #expect(await suspendUntil { found.value.count == 1 }, "no report after the patience")
            kept.value?()  // done, late: the value is free again
            #expect(await value.suspend.lowestPriority.get().map(\.entries) == .success(1))
            return line
        }.result
        let reports = found.value
        #expect(reports.count == 1, "one report per command")
        let message = reports.first?.message ?? ""
        #expect(message.contains("QueueSafeValue<Ledger>"), "\(message)")
        #expect(message.contains("async(performIn:)"), "\(message)")
        #expect(message.contains("ManualCompletionDoctorTests.swift:\(line)"), "\(message)")
        #expect(message.contains("still holds the value 10.0 seconds after"), "the time it waited: \(message)")
        #expect(message.contains("done() has not been called"), "\(message)")
        #expect(message.contains("ManualCompletionDoctor.patience"), "\(message)")
        #expect(reports.first?.sites == self.site(line))
    }

    @Test("a forgotten done after timely ones on the same value is reported once, at its own site, after its patience")
    func forgottenAfterTimelyIsReported() async throws {
        let clock = TestClock()
        let found = AtomicBox<[DiagnosticReport]>([])
        let line = try await DiagnosticReports.capture(where: overdueLedgerReports(into: found)) { () -> UInt in
            let value = QueueSafeValue(value: Ledger(), completionWatchClock: clock)
            let queue = DispatchQueue(label: "test.doctor.rearm")
            let command = value.async(performIn: queue).lowestPriority
            // Timely, and each done comes after its closure returned (the serial queue runs it after the command's
            // job): the first sets the value's one timer, due at 10 s.
            for _ in 0..<20 {
                command.set(manualCompletion: { ledger, done in
                    ledger.entries += 1
                    queue.async { done() }
                })
            }
            #expect(await value.suspend.lowestPriority.get().map(\.entries) == .success(20))
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            #expect(clock.deadlines == [clock.now.advanced(by: Self.patience)])
            // The forgotten command comes at 5 s: the timer finds it at 10 s not yet due, and sets itself again.
            clock.advance(by: .seconds(5))
            let kept = AtomicBox<CommandCompletionClosure?>(nil)
            let line: UInt = #line + 1
            command.set(manualCompletion: { _, done in kept.mutate { $0 = done } })
            #expect(await suspendUntil { kept.value != nil })
            await offPool { queue.sync {} }  // the command's job, which notes it for the watch, has ended
            clock.advance(by: .seconds(5))
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            #expect(clock.deadlines == [clock.now.advanced(by: .seconds(5))], "set again for the forgotten command")
            #expect(found.value.isEmpty)
            clock.advance(by: .seconds(5))
            #expect(await suspendUntil { found.value.count == 1 }, "the forgotten done is missed")
            kept.value?()
            #expect(await value.suspend.lowestPriority.get().map(\.entries) == .success(20))
            return line
        }.result
        #expect(found.value.map(\.sites) == [self.site(line)])
    }

    @Test("a wait command whose done is forgotten is reported while its caller still waits")
    func waitForgottenDoneIsReported() async throws {
        let clock = TestClock()
        let found = AtomicBox<[DiagnosticReport]>([])
        _ = try await DiagnosticReports.capture(where: overdueLedgerReports(into: found)) {
            let value = QueueSafeValue(value: Ledger(), completionWatchClock: clock)
            let kept = AtomicBox<CommandCompletionClosure?>(nil)
            let caller = Task {
                await offPool {
                    value.wait.lowestPriority.set(manualCompletion: { ledger, done in
                        ledger.entries += 1
                        kept.mutate { $0 = done }  // called once the report is in: until then the caller waits
                    })
                }
            }
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            clock.advance(by: Self.patience)
            #expect(await suspendUntil { found.value.count == 1 }, "no report")
            kept.value?()
            #expect(await caller.value.map(\.entries) == .success(1))
        }
        #expect(found.value.count == 1)
        #expect(found.value.first?.message.contains("on its wait schedule") == true)
    }

    @Test("a command whose done comes, before or after its closure returns, within the patience is not reported")
    func timelyDoneIsNotReported() async throws {
        let clock = TestClock()
        let found = AtomicBox<[DiagnosticReport]>([])
        let line = try await DiagnosticReports.capture(where: overdueLedgerReports(into: found)) { () -> UInt in
            let value = QueueSafeValue(value: Ledger(), completionWatchClock: clock)
            let queue = DispatchQueue(label: "test.doctor.timely")
            value.async(performIn: queue).lowestPriority.set(manualCompletion: { ledger, done in
                ledger.entries += 1
                // After the closure returns, at once: the serial queue runs it after the command's job, which has
                // handed the command to the value's watch by then. (A done that comes before that look needs no
                // watch.)
                queue.async { done() }
            })
            value.async(performIn: queue).lowestPriority.set(manualCompletion: { ledger, done in
                ledger.entries += 1
                done()  // inside the closure: no watch at all
            })
            #expect(await value.suspend.lowestPriority.get().map(\.entries) == .success(2))
            // The first command's check comes at 10 s, and finds its done.
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            clock.advance(by: Self.patience)
            // The witness: a forgotten command after them. The value has one check at a time, so its report comes
            // after the check above: if that check had reported, it would be here first.
            let kept = AtomicBox<CommandCompletionClosure?>(nil)
            let line: UInt = #line + 1
            value.async(performIn: queue).lowestPriority.set(manualCompletion: { _, done in kept.mutate { $0 = done } })
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            clock.advance(by: Self.patience)
            #expect(await suspendUntil { found.value.count == 1 })
            kept.value?()
            #expect(await value.suspend.lowestPriority.get().map(\.entries) == .success(2))
            return line
        }.result
        #expect(found.value.map(\.sites) == [self.site(line)], "only the witness is reported")
    }

    @Test("with patience nil the doctor is off: a forgotten done sets no check and is not reported")
    func offReportsNothing() async throws {
        let clock = TestClock()
        let found = AtomicBox<[DiagnosticReport]>([])
        let line = try await DiagnosticReports.capture(where: overdueLedgerReports(into: found)) { () -> UInt in
            let value = QueueSafeValue(value: Ledger(), completionWatchClock: clock)
            let queue = DispatchQueue(label: "test.doctor.off")
            let kept = AtomicBox<CommandCompletionClosure?>(nil)
            ManualCompletionDoctor.patience = nil
            value.async(performIn: queue).lowestPriority.get(manualCompletion: { _, done in kept.mutate { $0 = done } })
            #expect(await suspendUntil { kept.value != nil })
            await offPool { queue.sync {} }  // the command's job, which notes it for the watch, has ended
            kept.value?()
            #expect(await value.suspend.lowestPriority.get().map(\.entries) == .success(0))
            ManualCompletionDoctor.patience = Self.patience
            // The witness, 5 s later: its check is due at 15 s. Had the first command set a check, due at 10 s, the
            // witness would set none, and the one check on the clock would be that one.
            clock.advance(by: .seconds(5))
            let witness = AtomicBox<CommandCompletionClosure?>(nil)
            let line: UInt = #line + 1
            value.async(performIn: queue).lowestPriority.get(manualCompletion: { _, done in
                witness.mutate { $0 = done }
            })
            try await clock.waitForSleepers(1, timeout: patienceLimit)
            #expect(clock.deadlines == [clock.now.advanced(by: Self.patience)], "the first command set no check")
            clock.advance(by: Self.patience)
            #expect(await suspendUntil { found.value.count == 1 })
            witness.value?()
            return line
        }.result
        ManualCompletionDoctor.patience = Self.patience
        #expect(found.value.map(\.sites) == [self.site(line)], "only the witness is reported")
    }

    @Test("the default patience is ten seconds")
    func defaultPatience() {
        #expect(ManualCompletionDoctor.patience == .seconds(10))
    }

    @Test("a patience of zero or less traps with a message naming the setting and the value")
    func nonPositivePatienceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ManualCompletionDoctor.patience = .zero
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("ManualCompletionDoctor.patience must be nil or more than zero, got 0.0 seconds"))
    }
}
