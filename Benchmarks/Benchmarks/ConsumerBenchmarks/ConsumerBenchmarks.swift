// ConcurrencyKit measured as an app uses it — from another package, release build, values kept in properties and
// used from non-inlined functions (ConsumerShapes.swift) — side by side with what the app would pick instead, in
// the same process. Not pinned to a CPU: an app is not. 1,000 operations per measured iteration unless a name says
// otherwise.

import Benchmark
import BenchmarkSupport
import ConcurrencyKit
import Foundation
import OpenCombine

/// Nanoseconds to run 10,000 empty `ConcurrentOperation`s through a `Queuer`, added one at a time.
func timeQueuerRound() -> Double {
    let queuer = Queuer(name: "consumer.queuer.round")
    let operations = (0..<10_000).map { _ in ConcurrentOperation { _ in } }
    return nanoseconds {
        for operation in operations { queuer.addOperation(operation) }
        queuer.waitUntilAllOperationsAreFinished()
    }
}

/// Nanoseconds to await 1,000 requests one after another, each made by `send`.
func timeRequests(_ client: RequestClient, _ send: (RequestClient, Int) async throws -> Int) async -> Double {
    await nanosecondsAwaiting {
        for index in 0..<1_000 { blackHole(try? await send(client, index)) }
    }
}

var operationBatches: Benchmark.Configuration {
    .init(metrics: [.wallClock], maxDuration: .seconds(3), maxIterations: 100)
}

let benchmarks: @Sendable () -> Void = {
    // A guarded Int, read and written.
    Benchmark("consumer pthread_mutex get", configuration: uncontended) { benchmark in
        let stock = PthreadStockHolder()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(read(stock)) }
    }
    Benchmark("consumer NIOLockedValueBox get", configuration: uncontended) { benchmark in
        let stock = NIOStock()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(read(stock)) }
    }
    Benchmark("consumer Synchronization.Mutex get", configuration: uncontended) { benchmark in
        let stock = MutexStock()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(read(stock)) }
    }
    Benchmark("consumer QueueSafeValue wait get", configuration: uncontended) { benchmark in
        let stock = SafeValueStock()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(read(stock)) }
    }
    Benchmark("consumer pthread_mutex set", configuration: uncontended) { benchmark in
        let stock = PthreadStockHolder()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { write(stock, index) }
    }
    Benchmark("consumer NIOLockedValueBox set", configuration: uncontended) { benchmark in
        let stock = NIOStock()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { write(stock, index) }
    }
    Benchmark("consumer QueueSafeValue wait set(newValue:)", configuration: uncontended) { benchmark in
        let stock = SafeValueStock()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { write(stock, index) }
    }

    // The same from a task.
    Benchmark("consumer actor get", configuration: uncontended) { benchmark async in
        let stock = ActorStock()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(await read(stock)) }
    }
    Benchmark("consumer QueueSafeValue suspend get", configuration: uncontended) { benchmark async in
        let stock = SafeValueStock()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(await read(stock)) }
    }

    // Two threads writing one value.
    Benchmark("consumer NIOLockedValueBox set 2 threads", configuration: twoThreads) { benchmark in
        let stock = NIOStock()
        benchmark.startMeasurement()
        onTwoThreads(benchmark.scaledIterations.count) { write(stock, 1) }
    }
    Benchmark("consumer QueueSafeValue wait set(newValue:) 2 threads", configuration: twoThreads) { benchmark in
        let stock = SafeValueStock()
        benchmark.startMeasurement()
        onTwoThreads(benchmark.scaledIterations.count) { write(stock, 1) }
    }

    // Multicast to inline subscribers.
    for subscribers in [1, 10] {
        Benchmark("consumer OpenCombine PassthroughSubject.send to \(subscribers) sink", configuration: uncontended) {
            benchmark in
            let feed = CombineFeed(subscribers: subscribers)
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations { publish(feed, index) }
            benchmark.stopMeasurement()
            blackHole(feed.tally.sum)
        }
        Benchmark("consumer CallbackSubject.send to \(subscribers) untouch", configuration: uncontended) { benchmark in
            let feed = SubjectFeed(subscribers: subscribers)
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations { publish(feed, index) }
            benchmark.stopMeasurement()
            blackHole(feed.tally.sum)
        }
    }

    // A stream of values consumed by a task: for information.
    Benchmark("consumer AsyncStream yield and next", configuration: uncontended) { benchmark async in
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
        var iterator = stream.makeAsyncIterator()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            continuation.yield(index)
            blackHole(await iterator.next())
        }
    }
    Benchmark("consumer CallbackSubject.values send and next", configuration: uncontended) { benchmark async in
        let subject = CallbackSubject<Int, Never>()
        var iterator = subject.values.makeAsyncIterator()
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            subject.send(index)
            blackHole(await iterator.next())
        }
    }

    // A queue-confined cache, from a thread not on the queue.
    let dispatchCache = DispatchQueueCache()
    Benchmark("consumer DispatchQueue.sync", configuration: uncontended) { benchmark in
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { touch(dispatchCache) }
    }
    let gcdCache = GCDQueueCache()
    Benchmark("consumer GCDQueue.sync", configuration: uncontended) { benchmark in
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { touch(gcdCache) }
    }

    // 10,000 empty operations, added one at a time: rounds of ours and of OperationQueue alternate, and each pair of
    // rounds gives one ratio, so that a slow spell of the machine weighs on both sides alike.
    Benchmark("consumer Queuer/OperationQueue 10000 operations alternating rounds", configuration: alternatingRounds) {
        benchmark in
        alternate(benchmark, ours: timeQueuerRound, theirs: timeOperationQueueRound)
    }
    // 1,000 awaited requests under a Queuer's limit whose first attempt succeeds, with and without a retry
    // configuration: rounds alternate, as above.
    Benchmark("consumer Queuer.run(retrying:)/Queuer.run alternating rounds", configuration: alternatingRounds) {
        benchmark async in
        let client = RequestClient()
        await alternate(
            benchmark,
            ours: { await timeRequests(client, requestRetrying) },
            theirs: { await timeRequests(client, request) }
        )
    }
    // 10,000 empty operations, added one at a time.
    Benchmark("consumer OperationQueue 10000 BlockOperations", configuration: operationBatches) { benchmark in
        let queue = OperationQueue()
        let operations = (0..<10_000).map { _ in BlockOperation {} }
        benchmark.startMeasurement()
        for operation in operations { queue.addOperation(operation) }
        queue.waitUntilAllOperationsAreFinished()
    }
    Benchmark("consumer Queuer 10000 ConcurrentOperations", configuration: operationBatches) { benchmark in
        let queuer = Queuer(name: "consumer.queuer")
        let operations = (0..<10_000).map { _ in ConcurrentOperation { _ in } }
        benchmark.startMeasurement()
        for operation in operations { queuer.addOperation(operation) }
        queuer.waitUntilAllOperationsAreFinished()
    }
}
