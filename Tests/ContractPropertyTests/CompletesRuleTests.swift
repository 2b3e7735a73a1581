import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

/// The rule by which the tests time their awaits (``completes(within:_:)``): a body that returns in time counts as
/// completed; one that does not is given up at the deadline, and left running.
@Suite("Contract properties: an untimely await is given up", .timeLimit(propertyTimeLimit))
struct CompletesRuleTests {
    @Test("a body that returns gives true; one that does not gives false at the deadline, and is left running")
    func givesUpAtTheDeadline() async {
        #expect(await completes {}, "a body that returned at once was called late")

        // The body waits for the test, which lets it go only after `completes` gave up; a `completes` that waited
        // for the body anyway would return true after the body's own ten seconds, and fail here instead of hanging.
        let release = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        let start = DispatchTime.now()
        let completed = await completes(within: 1) {
            _ = await waitOffPool(release, seconds: 10)
            returned.signal()
        }
        let took = DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds
        #expect(!completed, "a body still waiting for the test was called completed")
        #expect(took >= 1_000_000_000, "given up after \(took) ns, before its deadline of one second")
        release.signal()
        #expect(await waitOffPool(returned), "the body given up on did not go on to return")
    }

    @Test("what a body throws in time is rethrown")
    func rethrowsWhatTheBodyThrew() async {
        struct Thrown: Error, Equatable {}
        await #expect(throws: Thrown()) { try await completes { throw Thrown() } }
    }

    @Test("a body that returns as the timer fires resumes the caller once")
    func resumesOnce() async {
        // A deadline of zero seconds fires at once, racing the body's return: either may win, and a second resume
        // of the checked continuation would trap the test process.
        for _ in 0..<200 { _ = await completes(within: 0) {} }
    }
}
