import AtomicPrimitives
import Dispatch
import SafeValueCore
import TestSupport
import Testing

/// The values of these tests: the reports they capture name this type, and no other test's do.
private struct Ledger: Sendable {
    var entries = 0
}

/// A capture filter that accepts the reports about a `QueueSafeValue<Ledger>` whose `done` is overdue: each one is
/// added to `found`, and then signals `reported`.
///
/// The test reads `found`, not the capture's own list: that one gets the report just after the filter returns, so a
/// body that ends as soon as `reported` is signalled could miss it.
private func overdueLedgerReports(
    into found: AtomicBox<[DiagnosticReport]>,
    signalling reported: DispatchSemaphore
) -> @Sendable (DiagnosticReport) -> Bool {
    { report in
        guard report.kind == .manualCompletionOverdue, report.resources == ["QueueSafeValue<Ledger>"] else {
            return false
        }
        found.mutate { $0.append(report) }
        reported.signal()
        return true
    }
}

/// The patience is one global setting: these tests change it one at a time, and put it back.
@Suite("ManualCompletionDoctor", .serialized, .timeLimit(.minutes(1)))
struct ManualCompletionDoctorTests {
    /// Runs `body` with the doctor's patience set to `patience`, then restores the default.
    private func withPatience<Result>(_ patience: Duration?, _ body: () throws -> Result) rethrows -> Result {
        let saved = ManualCompletionDoctor.patience
        ManualCompletionDoctor.patience = patience
        defer { ManualCompletionDoctor.patience = saved }
        return try body()
    }

    @Test("an async command whose done is forgotten is reported after the patience, naming the type, site and fix")
    func asyncForgottenDoneIsReported() async throws {
        try await offPoolTest { checks in
            let reported = DispatchSemaphore(value: 0)
            let found = AtomicBox<[DiagnosticReport]>([])
            let overdue = overdueLedgerReports(into: found, signalling: reported)
            let site = self.withPatience(.milliseconds(30)) {
                DiagnosticReports.capture(where: overdue) { () -> UInt in
                    let value = QueueSafeValue(value: Ledger())
                    let kept = AtomicBox<CommandCompletionClosure?>(nil)
                    let queue = DispatchQueue(label: "test.doctor.async")
                    let line: UInt = #line + 1
                    value.async(performIn: queue).lowestPriority.set(manualCompletion: { ledger, done in
                        ledger.entries += 1
                        kept.mutate { $0 = done }  // returns without calling done
                    })
                    checks.expect(reported.wait(timeout: deadline()) == .success, "no report after the patience")
                    kept.value?()  // done, late: the value is free again
                    checks.expect(value.wait.lowestPriority.get().map(\.entries) == .success(1))
                    return line
                }.result
            }
            let reports = found.value
            checks.expect(reports.count == 1, "one report per command")
            let message = reports.first?.message ?? ""
            checks.expect(message.contains("QueueSafeValue<Ledger>"), message)
            checks.expect(message.contains("async(performIn:)"), message)
            checks.expect(message.contains("ManualCompletionDoctorTests.swift:\(site)"), message)
            checks.expect(message.contains("done() has not been called"), message)
            checks.expect(message.contains("ManualCompletionDoctor.patience"), message)
            checks.expect(reports.first?.sites == ["SafeValueCoreTests/ManualCompletionDoctorTests.swift:\(site)"])
        }
    }

    @Test("a forgotten done after timely ones on the same value is reported once, at its own site")
    func forgottenAfterTimelyIsReported() async throws {
        try await offPoolTest { checks in
            let reported = DispatchSemaphore(value: 0)
            let found = AtomicBox<[DiagnosticReport]>([])
            let overdue = overdueLedgerReports(into: found, signalling: reported)
            let site = self.withPatience(.milliseconds(100)) {
                DiagnosticReports.capture(where: overdue) { () -> UInt in
                    let value = QueueSafeValue(value: Ledger())
                    let queue = DispatchQueue(label: "test.doctor.rearm")
                    let command = value.async(performIn: queue).lowestPriority
                    // Timely, and each done comes after its closure returned (the serial queue runs it after the
                    // command's job): the first sets the value's one timer, and the forgotten one below is pending
                    // when it fires, not yet due.
                    for _ in 0..<20 {
                        command.set(manualCompletion: { ledger, done in
                            ledger.entries += 1
                            queue.async { done() }
                        })
                    }
                    checks.expect(value.wait.lowestPriority.get().map(\.entries) == .success(20))
                    // Not a proof, a setting: the forgotten command comes well after the first, so that the timer
                    // finds it not yet due (Dispatch may fire a 100 ms timer some 10 ms late) and must set itself again.
                    _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(40))
                    let kept = AtomicBox<CommandCompletionClosure?>(nil)
                    let line: UInt = #line + 1
                    command.set(manualCompletion: { _, done in kept.mutate { $0 = done } })
                    checks.expect(reported.wait(timeout: deadline()) == .success, "the forgotten done is missed")
                    kept.value?()
                    checks.expect(value.wait.lowestPriority.get().map(\.entries) == .success(20))
                    return line
                }.result
            }
            checks.expect(
                found.value.map(\.sites) == [["SafeValueCoreTests/ManualCompletionDoctorTests.swift:\(site)"]]
            )
        }
    }

    @Test("a wait command whose done is forgotten is reported while its caller still waits")
    func waitForgottenDoneIsReported() async throws {
        try await offPoolTest { checks in
            let reported = DispatchSemaphore(value: 0)
            let found = AtomicBox<[DiagnosticReport]>([])
            let overdue = overdueLedgerReports(into: found, signalling: reported)
            _ = self.withPatience(.milliseconds(30)) {
                DiagnosticReports.capture(where: overdue) {
                    let value = QueueSafeValue(value: Ledger())
                    let result = value.wait.lowestPriority.set(manualCompletion: { ledger, done in
                        ledger.entries += 1
                        // done is called once the report is in: until then this caller waits.
                        DispatchQueue.global().async {
                            checks.expect(reported.wait(timeout: deadline()) == .success, "no report")
                            done()
                        }
                    })
                    checks.expect(result.map(\.entries) == .success(1))
                }
            }
            checks.expect(found.value.count == 1)
            checks.expect(found.value.first?.message.contains("on its wait schedule") == true)
        }
    }

    @Test("a command whose done comes, before or after its closure returns, within the patience is not reported")
    func timelyDoneIsNotReported() async throws {
        try await offPoolTest { checks in
            let reported = DispatchSemaphore(value: 0)
            let found = AtomicBox<[DiagnosticReport]>([])
            let overdue = overdueLedgerReports(into: found, signalling: reported)
            _ = self.withPatience(.milliseconds(30)) {
                DiagnosticReports.capture(where: overdue) {
                    let value = QueueSafeValue(value: Ledger())
                    let queue = DispatchQueue(label: "test.doctor.timely")
                    let finished = DispatchGroup()
                    finished.enter()
                    value.async(performIn: queue).lowestPriority.set(manualCompletion: { ledger, done in
                        ledger.entries += 1
                        DispatchQueue.global().async { done() }  // after the closure returns, at once
                    }) { _ in finished.leave() }
                    value.wait.lowestPriority.set(manualCompletion: { ledger, done in
                        ledger.entries += 1
                        done()  // inside the closure: no watch at all
                    })
                    checks.expect(finished.wait(timeout: deadline()) == .success)
                    // The watch of the first command checks after 30 ms: give it well past that to report wrongly.
                    checks.expect(reported.wait(timeout: .now() + .milliseconds(300)) == .timedOut)
                }
            }
            checks.expect(found.value.isEmpty)
        }
    }

    @Test("with patience nil the doctor is off: a forgotten done is not reported")
    func offReportsNothing() async throws {
        try await offPoolTest { checks in
            let reported = DispatchSemaphore(value: 0)
            let found = AtomicBox<[DiagnosticReport]>([])
            let overdue = overdueLedgerReports(into: found, signalling: reported)
            _ = self.withPatience(nil) {
                DiagnosticReports.capture(where: overdue) {
                    let value = QueueSafeValue(value: Ledger())
                    let kept = AtomicBox<CommandCompletionClosure?>(nil)
                    value.async(performIn: DispatchQueue(label: "test.doctor.off")).lowestPriority.get(
                        manualCompletion: { _, done in kept.mutate { $0 = done } }
                    )
                    checks.expect(reported.wait(timeout: .now() + .milliseconds(300)) == .timedOut)
                    kept.value?()
                }
            }
            checks.expect(found.value.isEmpty)
        }
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
