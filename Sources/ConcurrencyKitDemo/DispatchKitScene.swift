import ConcurrencyKit
import Dispatch

/// A chained pipeline across queues, a group, a nested sync that would deadlock raw Dispatch, a once-only set-up
/// and a timer that is paused and resumed.
enum DispatchKitScene {
    static func run() {
        print("\n== DispatchKit")
        let io = GCDQueue(name: "demo.io")
        let compute = GCDQueue(name: "demo.compute")
        let steps = AtomicBox<[String]>([])
        let finished = CountingSemaphore(.barrier)

        let fetch = io + { steps.mutate { $0.append("fetch on io: \(io.isCurrent)") } }
        fetch <> { steps.mutate { $0.append("decode on io: \(io.isCurrent)") } }
            <> GCDTask(queue: compute) { steps.mutate { $0.append("render on compute: \(compute.isCurrent)") } }
            <> { finished.signal() }
        fetch.async()
        _ = finished.wait(.now() + .seconds(5))
        print("GCDTask chain: \(steps.value)")

        let nested = io.sync { compute.sync { io.sync { "inline" } } }
        print("GCDQueue.sync: io.sync { compute.sync { io.sync { ... } } } ran \(nested), no deadlock")

        let group = GCDGroup(queue: compute)
        let parts = AtomicBox(0)
        for _ in 0..<4 { group <<< { parts.mutate { $0 += 1 } } }
        let grouped = group.wait(timeout: .now() + .seconds(5)) == .success
        print("GCDGroup: 4 blocks finished: \(grouped), counted \(parts.value)")

        let setUp = OnceDispatcher()
        let setUps = AtomicBox(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in setUp { setUps.mutate { $0 += 1 } } }
        print("OnceDispatcher: 8 threads called it, the block ran \(setUps.value) time")

        let ticks = AtomicBox(0)
        let ticked = CountingSemaphore(.barrier)
        let timer = GCDTimer.scheduleWithInterval(0.05, onQueue: io, repeating: 0.05) {
            ticks.mutate { $0 += 1 }
            ticked.signal()
        }
        for _ in 0..<3 { _ = ticked.wait(.now() + .seconds(5)) }
        timer.pause()
        let pausedAt = ticks.value
        print("GCDTimer: ticked \(pausedAt) times every 50 ms, paused (running: \(timer.isRunning))")
        timer.start()
        _ = ticked.wait(.now() + .seconds(5))
        timer.stop()
        print("GCDTimer: resumed, ticked again, stopped (running: \(timer.isRunning))")
    }
}
