import ConcurrencyKit
import Foundation

/// An app's screen model, isolated to the main actor, that uses every async face of ConcurrencyKit: it compiles only
/// while they all fit a Swift 6 `@MainActor` app target.
@MainActor
public final class Dashboard {
    /// The readings received so far, in order.
    public private(set) var readings: [Double] = []
    /// How many timer ticks the dashboard has seen.
    public private(set) var ticks = 0
    /// The sum of the downloads, once ``refresh()`` has run.
    public private(set) var total = 0

    private let downloads = Queuer(name: "dashboard.downloads", maxConcurrentOperationCount: 2)
    private let connections = CountingSemaphore(resources: 2)

    /// Creates an empty dashboard.
    public init() {}

    /// Follows a sensor's readings until it completes, appending each one.
    ///
    /// - Parameter readings: The sensor's `values`, made by the caller where listening begins.
    public func follow(_ readings: CallbackSubjectValues<Double, Never>) async {
        for await celsius in readings { self.readings.append(celsius) }
    }

    /// Counts `count` ticks of a fast timer, then stops it.
    public func countTicks(_ count: Int) async {
        let timer = GCDTimer(interval: 0.001)
        timer.repeatInterval = 0.001
        for await _ in timer.ticks {  // starts the new timer
            self.ticks += 1
            if self.ticks == count { timer.stop() }
        }
    }

    /// Downloads `1...count` under the Queuer's limit and at most two connections, then runs a retried flaky step.
    public func refresh(count: Int) async throws {
        let connections = self.connections
        var total = 0
        for index in 1...count {
            total += try await self.downloads.run {
                try await connections.withPermit { index }
            }
        }
        let flaky = AsyncOperation { operation in
            if operation.currentAttempt == 1 { throw CancellationError() }
        }
        flaky.retryPolicy = .constant(.milliseconds(1))
        self.downloads.addOperation(flaky)
        await self.downloads.waitUntilAllOperationsAreFinished()
        self.total = flaky.success ? total : -1
    }
}

/// The same API from nonisolated code.
public func nonisolatedTour() async throws -> Int {
    let semaphore = CountingSemaphore(.binary)
    try await semaphore.wait()
    semaphore.signal()
    return try await Queuer(name: "tour").run { try await semaphore.withPermit { 42 } }
}
