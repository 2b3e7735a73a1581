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

    /// Runs `block` once on a GCDQueue of its own, and returns what it returns.
    ///
    /// The caller suspends, it does not block: `GCDQueue.sync` from async code would hold a thread of the
    /// cooperative pool (ConcurrencyKit's debug builds report it).
    public func onWorker<T: Sendable>(_ block: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            GCDQueue(name: "pipeline.worker").async { continuation.resume(returning: block()) }
        }
    }
}
