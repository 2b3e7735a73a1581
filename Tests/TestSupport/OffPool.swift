import AtomicPrimitives
import Dispatch
import Foundation

/// Runs `body` on a thread of its own and suspends the calling task until it returns.
///
/// Property tests block (semaphores, thread joins, bounded spins). Blocking a thread of Swift's cooperative pool —
/// on Linux it is libdispatch's global pool, as wide as the machine has cores — would starve the very queues whose
/// work the test waits for (`async` commands, dispatch routes, operations), and on two cores two such tests stall
/// every other one. So a property test suspends, and its blocking work runs here.
///
/// At most ``OffPoolSlots/count`` bodies run at once, the rest suspend in line: the suite's blocking tests used to be
/// throttled by the pool's few threads, and without a bound all of them would run at once on two cores, stretching
/// every timing window (and the time limits under the sanitizers).
public func offPool<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await OffPoolSlots.shared.take()
    let result = await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
    await OffPoolSlots.shared.give()
    return result
}

/// Waits for `group`, for at most `seconds`, on a thread of its own, without blocking the cooperative pool.
///
/// - Returns: `false` if the group had not emptied within `seconds`.
public func waitOffPool(_ group: DispatchGroup, seconds: Int = patienceSeconds) async -> Bool {
    await offPool { group.wait(timeout: deadline(seconds)) == .success }
}

/// The failures a property test's off-pool body found, reported by the test afterwards, on its own task (where
/// Swift Testing attributes them to the test).
public final class PropertyFailures: Sendable {
    private let messages = AtomicBox<[String]>([])

    /// Creates an empty collector.
    public init() {}

    /// Notes `message` as a failure unless `condition` holds; returns `condition`.
    @discardableResult
    public func expect(
        _ condition: Bool,
        _ message: @autoclosure () -> String = "expectation failed",
        line: Int = #line
    ) -> Bool {
        if !condition { self.record("\(message()) (line \(line))") }
        return condition
    }

    /// Notes a failure.
    public func record(_ message: String) {
        self.messages.mutate { $0.append(message) }
    }

    /// Whether any failure was noted.
    public var isEmpty: Bool { self.messages.value.isEmpty }

    /// The failures noted, in order.
    public var all: [String] { self.messages.value }
}

/// Waits for `semaphore`, for at most `seconds`, on a thread of its own, without blocking the cooperative pool.
///
/// - Returns: `false` if it was not signalled within `seconds`.
public func waitOffPool(_ semaphore: DispatchSemaphore, seconds: Int = patienceSeconds) async -> Bool {
    await offPool { semaphore.wait(timeout: deadline(seconds)) == .success }
}

/// Runs `body(index)` on `count` dedicated threads released together, and suspends until all of them returned; the
/// async form of `runOnThreads(_:seconds:_:)`, which blocks no thread of the cooperative pool.
///
/// - Returns: `false` if they had not all returned within `seconds`.
public func runOnThreadsOffPool(
    _ count: Int,
    seconds: Int = patienceSeconds,
    _ body: @escaping @Sendable (Int) -> Void
) async -> Bool {
    await offPool { runOnThreads(count, seconds: seconds, body) }
}
