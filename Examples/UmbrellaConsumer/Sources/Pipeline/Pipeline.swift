import ConcurrencyKit
import Foundation

/// Processes jobs on a Queuer, keeps results in a QueueSafeValue, and reports progress through a CallbackSubject.
public final class Pipeline: Sendable {
    /// Progress: how many jobs have finished.
    public let progress = CallbackSubject<Int, Never>()
    private let results = QueueSafeValue(value: [Int]())
    private let queuer = Queuer(name: "pipeline", maxConcurrentOperationCount: 2)
    private let finished = AtomicBox(0)

    /// Creates a pipeline with no results yet.
    public init() {}

    /// Squares each input on the queue, then returns the sorted results.
    public func run(_ inputs: [Int]) async -> [Int] {
        let operations = inputs.map { input in
            ConcurrentOperation { _ in
                self.results.wait.lowestPriority.set { $0.append(input * input) }
                let done = self.finished.mutate { count -> Int in
                    count += 1
                    return count
                }
                CallbackQueue.untouch.execute { self.progress.send(done) }
            }
        }
        operations.forEach(self.queuer.addOperation)
        await self.queuer.waitUntilAllOperationsAreFinished()
        return ((try? await self.results.suspend.lowestPriority.get().get()) ?? []).sorted()
    }

    /// Runs `block` once on a GCDQueue of its own, and waits for it.
    public func onWorker<T>(_ block: () -> T) -> T {
        GCDQueue(name: "pipeline.worker").sync(block)
    }
}
