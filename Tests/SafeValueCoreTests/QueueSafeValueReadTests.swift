import Dispatch
import SafeValueCore
import TestSupport
import Testing

/// `read()`, the throwing form of `get()`, and the errors' descriptions: a failed command is never silent when the
/// code uses the convenient form.
@Suite("QueueSafeValue: read() throws why a command did not run", .timeLimit(.minutes(1)))
struct QueueSafeValueReadTests {
    @Test("read() returns the value on both blocking and suspending schedules, after earlier writes")
    func readsTheValue() async throws {
        let value = QueueSafeValue(value: 1)
        try await offPoolTest { checks in
            value.wait.highestPriority.set(newValue: 5)
            checks.expect((try? value.wait.lowestPriority.read()) == 5)
        }
        await value.suspend.lowestPriority.set { $0 += 1 }
        #expect(try await value.suspend.lowestPriority.read() == 6)
    }

    @Test("read() inside a command of the same value throws reentrantWait, whose description names the rule")
    func reentrantReadThrows() async throws {
        try await offPoolTest { checks in
            let value = QueueSafeValue(value: 1)
            let caught = AtomicBox<QueueSafeValueError?>(nil)
            value.wait.lowestPriority.set { _ in
                do throws(QueueSafeValueError) {
                    _ = try value.wait.lowestPriority.read()
                } catch {
                    caught.mutate { $0 = error }
                }
            }
            checks.expect(caught.value == .reentrantWait)
            checks.expect("\(caught.value.map(String.init(describing:)) ?? "")".contains("would deadlock"))
        }
    }

    @Test("read() through a command object whose holder is gone throws valueContainerDeinited")
    func readAfterReleaseThrows() async throws {
        try await offPoolTest { checks in
            var holder: QueueSafeValue<Int>? = QueueSafeValue(value: 1)
            let command = holder!.wait.lowestPriority
            holder = nil
            let result = Result { () throws(QueueSafeValueError) in try command.read() }
            checks.expect(result, equals: .failure(.valueContainerDeinited))
        }
    }

    @Test("a suspend read() in a cancelled task throws cancelled")
    func cancelledReadThrows() async {
        let value = QueueSafeValue(value: 1)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await value.suspend.lowestPriority.read()
        }
        let taskEnded = await completes {
            await #expect(throws: QueueSafeValueError.cancelled) { try await task.value }
        }
        #expect(taskEnded)
    }

    @Test(
        "every error's description names its case and the rule",
        arguments: [
            (QueueSafeValueError.valueContainerDeinited, "keep the QueueSafeValue itself"),
            (.commandClosureDeallocated, "a nil closure"),
            (.reentrantWait, "would deadlock"),
            (.cancelled, "was cancelled before the command got the value"),
        ]
    )
    func descriptions(error: QueueSafeValueError, rule: String) {
        #expect(error.description.hasPrefix("QueueSafeValueError.\(error.caseName):"), "\(error)")
        #expect(error.description.contains(rule))
        #expect("\(Result<Int, QueueSafeValueError>.failure(error))".contains(rule))
    }
}

extension QueueSafeValueError {
    /// The case's name, as Swift spells it.
    fileprivate var caseName: String {
        switch self {
        case .valueContainerDeinited: "valueContainerDeinited"
        case .commandClosureDeallocated: "commandClosureDeallocated"
        case .reentrantWait: "reentrantWait"
        case .cancelled: "cancelled"
        }
    }
}
