// OperationQueuing against Foundation's OperationQueue in the same process.

import Benchmark
import BenchmarkSupport
import Foundation
import OperationQueuing

var batches: Benchmark.Configuration {
    .init(metrics: [.wallClock], maxDuration: .seconds(3), maxIterations: 100)
}

let benchmarks: @Sendable () -> Void = {
    pinToOneCPU()
    Benchmark("baseline OperationQueue 10000 empty BlockOperations", configuration: batches) { benchmark in
        let queue = OperationQueue()
        let operations = (0..<10_000).map { _ in BlockOperation {} }
        benchmark.startMeasurement()
        for operation in operations { queue.addOperation(operation) }  // one at a time, as through a Queuer
        queue.waitUntilAllOperationsAreFinished()
    }
    Benchmark("Queuer 10000 empty ConcurrentOperations", configuration: batches) { benchmark in
        let queuer = Queuer(name: "bench.queuer")
        let operations = (0..<10_000).map { _ in ConcurrentOperation { _ in } }
        benchmark.startMeasurement()
        for operation in operations { queuer.addOperation(operation) }
        queuer.waitUntilAllOperationsAreFinished()
    }
    Benchmark("Queuer 10000 empty AsyncOperations", configuration: batches) { benchmark in
        let queuer = Queuer(name: "bench.async")
        let operations = (0..<10_000).map { _ in AsyncOperation { _ in } }
        benchmark.startMeasurement()
        for operation in operations { queuer.addOperation(operation) }
        queuer.waitUntilAllOperationsAreFinished()
    }
    Benchmark(
        "Queuer AsyncOperations/OperationQueue BlockOperations alternating rounds",
        configuration: alternatingRounds
    ) {
        benchmark in
        alternate(
            benchmark,
            ours: {
                let queuer = Queuer(name: "bench.async.round")
                let operations = (0..<10_000).map { _ in AsyncOperation { _ in } }
                return nanoseconds {
                    for operation in operations { queuer.addOperation(operation) }
                    queuer.waitUntilAllOperationsAreFinished()
                }
            },
            theirs: timeOperationQueueRound
        )
    }
    Benchmark("baseline 100 ConcurrentOperations added directly", configuration: batches) { benchmark in
        let queuer = Queuer(name: "bench.direct")
        let operations = (0..<100).map { _ in ConcurrentOperation { _ in } }
        benchmark.startMeasurement()
        for operation in operations { queuer.addOperation(operation) }
        queuer.waitUntilAllOperationsAreFinished()
    }
    Benchmark("GroupOperation of 100 ConcurrentOperations", configuration: batches) { benchmark in
        let queuer = Queuer(name: "bench.group")
        let group = GroupOperation((0..<100).map { _ in ConcurrentOperation { _ in } })
        benchmark.startMeasurement()
        queuer.addOperation(group)
        queuer.waitUntilAllOperationsAreFinished()
    }
}
