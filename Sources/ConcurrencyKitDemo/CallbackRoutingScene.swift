import ConcurrencyKit
import Dispatch

/// A download on a worker queue reports progress to two subscribers: a "UI" on the main queue and a logger inline.
enum CallbackRoutingScene {
    static func run() {
        print("\n== CallbackRouting")
        let progress = CallbackSubject<Int, Never>()
        let uiUpdates = AtomicBox<[Int]>([])
        let finished = CountingSemaphore(.barrier)

        let ui = progress.subscribe(
            on: .mainAsync,
            receiveValue: { percent in
                uiUpdates.mutate { $0.append(percent) }
                print("  UI (main queue: \(CallbackQueue.isOnMainQueue)): \(percent)%")
            },
            receiveCompletion: { _ in
                print("  UI: download finished")
                finished.signal()
            }
        )
        let logger = progress.subscribe(on: .untouch) { percent in
            print("  log (inline on the worker): \(percent)%")
        }

        let worker = DispatchQueue(label: "demo.download")
        worker.async {
            for percent in stride(from: 25, through: 100, by: 25) {
                progress.send(percent)
            }
            progress.send(completion: .finished)
        }
        if finished.wait(.now() + .seconds(5)) == .timedOut {
            print("  the main queue was not drained: main-queue callbacks never ran")
        }
        print("CallbackSubject: the UI saw \(uiUpdates.value) in send order, on the main queue")

        let order = AtomicBox<[String]>([])
        let routed = CountingSemaphore(.barrier)
        CallbackQueue.mainCurrentOrAsync.execute {
            order.mutate { $0.append("completion on main: \(CallbackQueue.isOnMainQueue)") }
            routed.signal()
        }
        _ = routed.wait(.now() + .seconds(5))
        print("CallbackQueue.mainCurrentOrAsync from a worker hopped to main: \(order.value)")
        withExtendedLifetime((ui, logger)) {}
    }
}
