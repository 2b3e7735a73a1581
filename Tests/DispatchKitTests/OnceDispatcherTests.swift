import Dispatch
import DispatchKit
import TestSupport
import Testing

@Suite("OnceDispatcher", .timeLimit(.minutes(1)))
struct OnceDispatcherTests {
    @Test("runs exactly once under concurrent calls; later callers return after the first run finished")
    func exactlyOnce() async throws {
        try await offPoolTest { checks in
            let once = OnceDispatcher()
            let runs = AtomicBox(0)
            let finishedBeforeReturn = AtomicBox(true)
            let firstRunDone = AtomicBox(false)
            let finished = runOnThreads(contendingThreads * 4) { _ in
                once {
                    runs.mutate { $0 += 1 }
                    for _ in 0..<10_000 { runs.mutate { _ in } }  // make the first run take a moment
                    firstRunDone.mutate { $0 = true }
                }
                if !firstRunDone.value { finishedBeforeReturn.mutate { $0 = false } }
            }
            checks.expect(finished)
            checks.expect(runs.value == 1)
            checks.expect(finishedBeforeReturn.value)
            once { runs.mutate { $0 += 1 } }
            checks.expect(runs.value == 1)
        }
    }

    @Test("calling it from inside its own block traps instead of deadlocking")
    func reentryTraps() async {
        await #expect(processExitsWith: .failure) {
            let once = OnceDispatcher()
            once { once {} }
        }
    }
}
