import Dispatch
import Testing
import VisitCounter

@Suite("VisitCounter, a consumer of SafeValueCore alone", .timeLimit(.minutes(1)))
struct VisitCounterTests {
    @Test("concurrent visits are all counted, and reset clears them")
    func counts() async {
        let counter = VisitCounter()
        await onDispatchThread { DispatchQueue.concurrentPerform(iterations: 400) { _ in counter.visit("/") } }
        #expect(await counter.count(of: "/") == 400)
        await onDispatchThread { counter.reset() }
        #expect(await counter.count(of: "/") == 0)
        #expect(VisitCounter.lock.tryLock())
        VisitCounter.lock.unlock()
    }
}

/// Runs blocking code on a Dispatch thread and suspends until it is done: a test runs in a task, and a task that
/// blocks holds one of the cooperative pool's few threads (ConcurrencyKit's debug builds report it).
func onDispatchThread(_ body: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async {
            body()
            continuation.resume()
        }
    }
}
