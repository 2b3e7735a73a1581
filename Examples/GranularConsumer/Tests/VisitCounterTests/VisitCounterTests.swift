import Dispatch
import Testing
import VisitCounter

@Suite("VisitCounter, a consumer of SafeValueCore alone", .timeLimit(.minutes(1)))
struct VisitCounterTests {
    @Test("concurrent visits are all counted, and reset clears them")
    func counts() async {
        let counter = VisitCounter()
        DispatchQueue.concurrentPerform(iterations: 400) { _ in counter.visit("/") }
        #expect(await counter.count(of: "/") == 400)
        counter.reset()
        #expect(await counter.count(of: "/") == 0)
        #expect(VisitCounter.lock.tryLock())
        VisitCounter.lock.unlock()
    }
}
