import ConcurrencyKit
import Dispatch
import TestSupport
import Testing

/// Main-actor state that the async bodies of the package touch directly.
///
/// That this file compiles is half of each test. The rule (Docs/AsyncCode.md, "Isolation"): a body that runs inline takes the caller's isolation; a body that
/// runs elsewhere is `@Sendable` and runs where it says, here `@MainActor`.
@MainActor
private final class Counter {
    var count = 0
    /// Whether every body ran on the main queue, the main actor's executor.
    var allOnMain = true
    /// A value that is not `Sendable`: an inline body may use it, as it runs in the caller's isolation.
    var log = NonSendableLog()

    func bump() {
        self.count += 1
        self.allOnMain = self.allOnMain && CallbackQueue.isOnMainQueue
    }
}

/// A class that is not `Sendable`.
private final class NonSendableLog {
    var entries: [String] = []
}

@Suite("One isolation rule for async bodies", .timeLimit(.minutes(1)))
@MainActor
struct IsolationRuleTests {
    @Test("withPermit's body runs inline with the caller's isolation: it touches main-actor and non-Sendable state")
    func withPermitInheritsIsolation() async throws {
        let counter = Counter()
        let permits = CountingSemaphore(resources: 1)
        try await permits.withPermit {
            counter.bump()
            counter.log.entries.append("permit")
        }
        try await permits.withPermit { @MainActor in counter.bump() }
        #expect(counter.count == 2)
        #expect(counter.log.entries == ["permit"])
        #expect(counter.allOnMain)
    }

    @Test("a suspend command's closure runs inline with the caller's isolation")
    func suspendInheritsIsolation() async {
        let counter = Counter()
        let total = QueueSafeValue(value: 10)
        await total.suspend.lowestPriority.set { value in
            counter.bump()
            counter.log.entries.append("set")
            value += counter.count
        }
        let read = await total.suspend.highestPriority.map { value in
            counter.bump()
            return value
        }
        #expect(read == .success(11))
        #expect(counter.count == 2)
        #expect(counter.log.entries == ["set"])
        #expect(counter.allOnMain)
    }

    @Test("Queuer.run runs a body that says @MainActor on the main actor, under the queue's limit")
    func runWithMainActorBody() async throws {
        let counter = Counter()
        let queuer = Queuer(name: "test.isolation.run", maxConcurrentOperationCount: 1)
        try await queuer.run { @MainActor in counter.bump() }
        let value = try await queuer.run { @MainActor in
            await Task.yield()
            counter.bump()
            return counter.count
        }
        #expect(value == 2)
        #expect(counter.allOnMain)
    }

    @Test("AsyncOperation and addOperation run a body that says @MainActor on the main actor")
    func asyncOperationWithMainActorBody() async {
        let counter = Counter()
        let queuer = Queuer(name: "test.isolation.operations", maxConcurrentOperationCount: 2)
        let operation = AsyncOperation { @MainActor _ in counter.bump() }
        queuer.addOperation(operation)
        queuer.addOperation { @MainActor in
            await Task.yield()
            counter.bump()
        }
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(counter.count == 2)
        #expect(operation.success)
        #expect(counter.allOnMain)
    }

    @Test("a body that runs elsewhere and says nothing runs off the main actor")
    func unannotatedBodyRunsElsewhere() async throws {
        let queuer = Queuer(name: "test.isolation.elsewhere")
        let onMain = try await queuer.run { CallbackQueue.isOnMainQueue }
        #expect(onMain == false)
    }
}
