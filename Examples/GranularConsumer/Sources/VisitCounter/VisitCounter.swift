import SafeValueCore

/// Counts visits per page in a `QueueSafeValue`; urgent resets jump the queue.
public final class VisitCounter: Sendable {
    private let counts = QueueSafeValue(value: [String: Int]())

    /// Creates an empty counter.
    public init() {}

    /// Records a visit to `page` and returns its new count.
    @discardableResult
    public func visit(_ page: String) -> Int {
        let result = self.counts.wait.lowestPriority.set { $0[page, default: 0] += 1 }
        return (try? result.get())?[page] ?? 0
    }

    /// How many visits `page` has had.
    public func count(of page: String) async -> Int {
        (try? await self.counts.suspend.lowestPriority.map { $0[page, default: 0] }.get()) ?? 0
    }

    /// Forgets every count, ahead of any visit still waiting.
    public func reset() {
        self.counts.wait.highestPriority.set(newValue: [:])
    }

    /// A lock for callers' own bookkeeping: AtomicPrimitives comes with the SafeValueCore product.
    public static let lock = MutexLock()
}
