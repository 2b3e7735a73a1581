import ConcurrencyKit
import Dispatch

/// A chain on a Queuer: a flaky step that succeeds on its third attempt, a group of parallel steps, and a final
/// step, with a completion handler after them.
enum OperationQueuingScene {
    static func run() {
        print("\n== OperationQueuing")
        let queuer = Queuer(name: "demo.pipeline", maxConcurrentOperationCount: 3)
        let log = AtomicBox<[String]>([])

        let flaky = ConcurrentOperation(name: "fetch") { operation in
            operation.success = operation.currentAttempt == 3
            log.mutate {
                $0.append("fetch attempt \(operation.currentAttempt): \(operation.success ? "ok" : "failed")")
            }
        }
        let resize = GroupOperation(
            (1...3).map { index in
                ConcurrentOperation(name: "resize \(index)") { _ in log.mutate { $0.append("resize \(index)") } }
            },
            completionHandler: { log.mutate { $0.append("group handler: all resized") } }
        )
        let publish = ConcurrentOperation(name: "publish") { _ in log.mutate { $0.append("publish") } }

        let finished = CountingSemaphore(.barrier)
        queuer.addChainedOperations(flaky, resize, publish) {
            log.mutate { $0.append("chain completion") }
            finished.signal()
        }
        _ = finished.wait(.now() + .seconds(5))
        for line in log.value { print("Queuer: \(line)") }
        print(
            "Queuer: the fetch took \(flaky.currentAttempt) attempts; the group succeeded: \(resize.allOperationsSucceeded)"
        )
    }
}
