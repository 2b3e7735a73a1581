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
        #expect(await pipeline.onWorker { 7 } == 7)
        subscription.cancel()
    }
}

@Suite("Dashboard: the async API from a @MainActor app target", .timeLimit(.minutes(1)))
struct DashboardTests {
    @Test("values, ticks, Queuer.run, withPermit and AsyncOperation work from the main actor")
    @MainActor
    func dashboard() async throws {
        let dashboard = Dashboard()
        let sensor = CallbackSubject<Double, Never>()
        let readings = sensor.values
        let following = Task { await dashboard.follow(readings) }
        sensor.send(20.5)
        sensor.send(21.0)
        sensor.send(completion: .finished)
        await following.value
        #expect(dashboard.readings == [20.5, 21.0])
        await dashboard.countTicks(3)
        #expect(dashboard.ticks == 3)
        try await dashboard.refresh(count: 4)
        #expect(dashboard.total == 10)
        #expect(try await nonisolatedTour() == 42)
    }
}
