import ConcurrencyKit
import Dispatch
import TestSupport
import Testing

/// A `wait` command that parks inside a task is reported with its own async form: the same command, at the same
/// priority, on the schedule that does not block — not one advice for every command.
@Suite(
    "The blocking-call report names each wait command's own async form",
    .serialized,
    .timeLimit(.minutes(1)),
    .debugBuildsOnly("the blocking-call check")
)
struct WaitCommandReportTests {
    /// One command of a value, made while another holds it, and the call and advice its report must name.
    struct Case: Sendable, CustomStringConvertible {
        let api: String
        let alternative: String
        let issue: @Sendable (QueueSafeValue<Int>) -> Void
        var description: String { self.api }
    }

    static let cases: [Case] = [
        Case(api: "value.wait.lowestPriority.get()", alternative: "await value.suspend.lowestPriority.get()") {
            _ = $0.wait.lowestPriority.get()
        },
        Case(api: "value.wait.highestPriority.get()", alternative: "await value.suspend.highestPriority.get()") {
            _ = try? $0.wait.highestPriority.read()
        },
        Case(
            api: "value.wait.highestPriority.set(newValue:)",
            alternative: "await value.suspend.highestPriority.set(newValue:)"
        ) { $0.wait.highestPriority.set(newValue: 1) },
        Case(api: "value.wait.lowestPriority.set { … }", alternative: "await value.suspend.lowestPriority.set { … }") {
            $0.wait.lowestPriority.set { $0 += 1 }
        },
        Case(api: "value.wait.highestPriority.map { … }", alternative: "await value.suspend.highestPriority.map { … }")
        {
            _ = $0.wait.highestPriority.map { $0 + 1 }
        },
        Case(
            api: "value.wait.lowestPriority.set(manualCompletion:)",
            alternative: "value.async(performIn: queue).lowestPriority.set(manualCompletion:)"
        ) { $0.wait.lowestPriority.set(manualCompletion: { _, done in done() }) },
    ]

    @Test(
        "a wait command that parks inside a task names itself and its async form",
        arguments: Self.cases
    )
    func namesItsOwnAsyncForm(_ command: Case) async {
        let value = QueueSafeValue(value: 0)
        let held = DispatchSemaphore(value: 0)
        let done = AtomicBox<CommandCompletionClosure?>(nil)
        value.async(performIn: .global()).lowestPriority.set(manualCompletion: { _, end in
            done.mutate { $0 = end }
            held.signal()
        })
        #expect(await offPool { held.wait(timeout: deadline()) } == .success)
        // Lets the value go once the command waits in line for it: then it has parked, and been reported.
        DispatchQueue.global().async {
            _ = eventually { value.waitingCommandCount == 1 }
            done.value?()
        }
        // Reports of this case only: other tests of the process, and this test's other cases, run meanwhile.
        let isThisCase: @Sendable (DiagnosticReport) -> Bool = {
            $0.kind == .blockingCallInTask && $0.resources == [command.api]
        }
        let found = DiagnosticReports.capture(where: isThisCase) {
            command.issue(value)
        }
        #expect(found.reports.count == 1)
        #expect(found.reports.first?.message.contains("Use \(command.alternative) instead") == true, "\(found.reports)")
    }
}
