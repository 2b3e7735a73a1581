import ConcurrencyKit
import Dispatch
import Foundation

/// The async faces: a semaphore that suspends, async operations with back-off, `Queuer.run`, and callbacks as
/// sequences.
enum AsyncScene {
    static func run() async throws {
        print("\n== Swift concurrency")
        try await limitWithPermits()
        await cancelAWaiter()
        try await retryWithBackOff()
        try await runUnderTheLimit()
        await loopOverValuesAndTicks()
    }

    /// Six downloads, two connections: `withPermit` suspends the others without blocking a thread.
    private static func limitWithPermits() async throws {
        let connections = CountingSemaphore(resources: 2)
        let gauge = AtomicBox((inside: 0, peak: 0))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    try await connections.withPermit {
                        gauge.mutate { state in
                            state.inside += 1
                            state.peak = max(state.peak, state.inside)
                        }
                        try await Task.sleep(for: .milliseconds(20))
                        gauge.mutate { $0.inside -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        print("withPermit: 6 downloads through 2 connections, at most \(gauge.value.peak) at once")
    }

    /// A task waiting for a resource is cancelled: it throws, and the signal goes to the next waiter instead.
    private static func cancelAWaiter() async {
        let gate = CountingSemaphore()
        let impatient = Task { try await gate.acquire() }
        let patient = Task { try await gate.acquire() }
        while gate.waiterCount < 2 { await Task.yield() }
        impatient.cancel()
        let outcome = await impatient.result
        gate.signal()
        let served = await patient.result
        print(
            "cancelled waiter: \(outcome.isFailure ? "threw CancellationError" : "was served"); "
                + "the next waiter \(served.isFailure ? "was not served" : "got the resource")"
        )
    }

    /// An async operation fails twice and succeeds on its third attempt, with exponential back-off between them.
    private static func retryWithBackOff() async throws {
        struct Timeout: Error {}
        let queuer = Queuer(name: "demo.async")
        let start = DispatchTime.now()
        let attempts = AtomicBox<[Int]>([])
        let fetch = AsyncOperation(name: "fetch") { operation in
            let elapsed = Int((DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1_000_000)
            attempts.mutate { $0.append(elapsed) }
            if operation.currentAttempt < 3 { throw Timeout() }
        }
        fetch.maximumRetries = 5
        fetch.retryPolicy = .exponential(initial: .milliseconds(50), maximum: .seconds(1))
        queuer.addOperation(fetch)
        await queuer.waitForAll()
        let times = attempts.value.map { "\($0) ms" }.joined(separator: ", ")
        print("AsyncOperation + RetryPolicy: attempts at \(times); success: \(fetch.success)")
    }

    /// `Queuer.run` returns each body's value, at most two bodies at a time.
    private static func runUnderTheLimit() async throws {
        let queuer = Queuer(name: "demo.run", maxConcurrentOperationCount: 2)
        let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
            for file in 1...5 {
                group.addTask { try await queuer.run { file * 1_024 } }
            }
            return try await group.reduce(0, +)
        }
        print("Queuer.run: 5 bodies under a limit of 2, \(sizes) bytes in all")
    }

    /// A subject's values and a timer's fires, each as an `AsyncSequence`.
    private static func loopOverValuesAndTicks() async {
        let prices = CallbackSubject<Double, Never>()
        let quotes = prices.values  // subscribed here: the loop gets every price sent from now on
        let watcher = Task {
            var seen: [Double] = []
            for await price in quotes { seen.append(price) }
            return seen
        }
        for price in [9.5, 10.25, 10.0] { prices.send(price) }
        prices.send(completion: .finished)
        print("CallbackSubject.values: \(await watcher.value), then the loop ended with the completion")

        let heartbeat = GCDTimer(interval: 0.01)
        heartbeat.repeatInterval = 0.01
        var beats = 0
        for await _ in heartbeat.ticks {  // starts the new timer
            beats += 1
            if beats == 3 { heartbeat.stop() }
        }
        print("GCDTimer.ticks: \(beats) fires, then stop() ended the loop")
    }
}

extension Result {
    fileprivate var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}
