import Dispatch
import TestSupport
import Testing

/// The rule by which the properties' "every command runs" checks call a run stuck (``waitForProgress(stillFor:progress:until:)``):
/// a run that still moves is waited for, however long it takes; one that stands still for the whole window is not.
@Suite("Contract properties: a run is stuck only when it stops moving", .timeLimit(propertyTimeLimit))
struct ProgressRuleTests {
    @Test("a run that keeps moving is waited for past the window; one that stands still is given up after it")
    func progressRule() async {
        let (moving, stuck, stuckTook) = await offPool { () -> (Bool, Bool, UInt64) in
            // Every look finds one more completion, for three windows of one second: never still for a whole window.
            var completed = 0
            let end = DispatchTime.now() + .seconds(3)
            let moving = waitForProgress(
                stillFor: 1,
                progress: {
                    completed += 1
                    return completed
                },
                until: { DispatchTime.now() > end }
            )
            let start = DispatchTime.now()
            let stuck = waitForProgress(stillFor: 1, progress: { 7 }, until: { false })
            return (moving, stuck, DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds)
        }
        #expect(moving, "a run that completed work at every look was called stuck")
        #expect(!stuck, "a run that never moved was waited for until it was done")
        #expect(stuckTook >= 1_000_000_000, "given up after \(stuckTook) ns, before its window of one second")
    }
}
