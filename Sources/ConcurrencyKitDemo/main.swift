// `make demo`: a short tour of ConcurrencyKit, printing what each scene shows as it happens.
//
// The scenes run on a worker thread while the main thread drains the main queue with `dispatchMain()`: on Linux,
// blocks sent to the main queue run only while something drains it.
import ConcurrencyKit
import Dispatch
import Foundation

DispatchQueue.global().async {
    print("ConcurrencyKit demo\n")
    AtomicPrimitivesScene.run()
    SafeValueCoreScene.run()
    DispatchKitScene.run()
    OperationQueuingScene.run()
    CallbackRoutingScene.run()
    DownloadPipelineTour.run()
    let asyncDone = DispatchSemaphore(value: 0)
    Task {
        do {
            try await AsyncScene.run()
        } catch {
            print("async scene failed: \(error)")
        }
        asyncDone.signal()
    }
    asyncDone.wait()
    print("\nDone.")
    exit(0)
}
dispatchMain()
