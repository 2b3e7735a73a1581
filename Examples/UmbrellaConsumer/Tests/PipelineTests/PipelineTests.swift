import ConcurrencyKit
import Pipeline
import Testing

@Suite("Pipeline, a consumer of the umbrella", .timeLimit(.minutes(1)))
struct PipelineTests {
    @Test("every job's result is kept, and progress reaches the job count")
    func run() async {
        let pipeline = Pipeline()
        let seen = AtomicBox<[Int]>([])
        let subscription = pipeline.progress.subscribe { done in seen.mutate { $0.append(done) } }
        #expect(await pipeline.run(Array(1...10)) == (1...10).map { $0 * $0 })
        #expect(seen.value.max() == 10)
        #expect(pipeline.onWorker { 7 } == 7)
        subscription.cancel()
    }
}
