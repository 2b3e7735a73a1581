import Dispatch
import DispatchKit
import TestSupport
import Testing

/// Main-actor state that blocks sent to `GCDQueue.main` touch directly: that this file compiles is half of each test.
@MainActor
private final class Ticks {
    var fired: [String] = []
    /// Whether every block ran on the main queue, the main actor's executor.
    var allOnMain = true

    func fire(_ name: String) {
        self.fired.append(name)
        self.allOnMain = self.allOnMain && GCDQueue.main.isCurrent
    }
}

@Suite("GCDQueue: @MainActor blocks on main", .timeLimit(.minutes(1)))
@MainActor
struct GCDQueueMainActorTests {
    @Test("async and after on main take a @MainActor closure that touches main-actor state, and run it on main")
    func mainTakesMainActorBlocks() async {
        let ticks = Ticks()
        GCDQueue.main.async { @MainActor in ticks.fire("async") }
        GCDQueue.main.after(0.001) { @MainActor in ticks.fire("after") }
        onNewThread {
            GCDQueue.main.async { @MainActor in ticks.fire("from elsewhere") }
        }
        #expect(await suspendUntil { ticks.fired.count == 3 })
        #expect(Set(ticks.fired) == ["async", "after", "from elsewhere"])
        #expect(ticks.allOnMain)
    }

    @Test("an unannotated closure still takes the nonisolated async, on any queue")
    func unannotatedStaysNonisolated() async {
        let ran = AtomicBox<Bool?>(nil)
        GCDQueue.utility.async { ran.mutate { $0 = GCDQueue.main.isCurrent } }  // a @MainActor overload would trap
        #expect(await suspendUntil { ran.value != nil })
        #expect(ran.value == false)
    }

    @Test(
        "a @MainActor closure sent to a queue other than main traps with a message naming the queue",
        arguments: ["async", "after"]
    )
    func mainActorBlockElsewhereTraps(api: String) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [api] in
            let queue = GCDQueue(name: "test.not-main")
            if api == "async" {
                queue.async { @MainActor in print("ran") }
            } else {
                queue.after(0) { @MainActor in print("ran") }
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains(
                "GCDQueue.\(api): a @MainActor block was sent to queue 'test.not-main', which does not run it on the "
                    + "main actor; only GCDQueue.main takes @MainActor blocks"
            ),
            "\(stderr)"
        )
    }
}
