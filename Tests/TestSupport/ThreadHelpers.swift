import AtomicPrimitives
import Dispatch
import Foundation
import Synchronization

/// How many threads contention tests start: one per core, and at least two.
public let contendingThreads = max(2, ProcessInfo.processInfo.activeProcessorCount)

/// A deadline `seconds` from now, by default ``patienceSeconds``, for every wait in the suite: a deadlock fails a
/// test instead of hanging it, and a loaded machine does not.
///
/// The first call starts the suite's ``WaitWatchdog`` (see ``suiteWatchdog``).
public func deadline(_ seconds: Int = patienceSeconds) -> DispatchTime {
    _ = suiteWatchdog
    return .now() + .seconds(seconds)
}

/// The test processes' ``WaitWatchdog``, started by the first ``deadline(_:)``, which nearly every test that waits
/// calls.
///
/// A test that deadlocks in one of the package's waits writes the wait report to standard error (at once for
/// a cycle, after half the patience for a stall), long before its wait gives up at ``patienceSeconds``, so that it
/// ends with the report rather than a bare time-out. A test that starts a watchdog of its own replaces it. Syncs onto
/// queues are recorded too (``WaitReport/recordsQueueSyncs``), unless `CONCURRENCYKIT_RECORD_SYNCS` is `0`.
public let suiteWatchdog: Void = {
    // Queue syncs too, so that every sync of the suites takes the recorded path; but for a run with
    // CONCURRENCYKIT_RECORD_SYNCS=0 (the gate's AddressSanitizer run), which keeps the plain path covered.
    WaitReport.recordsQueueSyncs = ProcessInfo.processInfo.environment["CONCURRENCYKIT_RECORD_SYNCS"] != "0"
    if !WaitWatchdog.isRunning { WaitWatchdog.start(after: .seconds(patienceSeconds / 2)) }
}()

/// Blocks the calling thread (a queue's block, a lock's holder, a callback) until the test signals `release`.
///
/// A hold outlasts every suite's time limit and every wait's ``patienceSeconds``: it gives up a minute after those,
/// so that a test that never lets go still ends. A shorter hold could end on its own on a busy machine, letting the
/// queue or lock go while the test still counts on it being held; the test would then fail for the wrong reason, or
/// pass without checking anything.
public func hold(until release: DispatchSemaphore) {
    _ = release.wait(timeout: deadline(patienceSeconds + 60))
}

/// Runs `body(index)` on `count` dedicated threads released together, and waits until all of them returned.
///
/// - Returns: `false` if they had not all returned within `seconds` (by default ``patienceSeconds``).
@discardableResult
public func runOnThreads(
    _ count: Int,
    seconds: Int = patienceSeconds,
    _ body: @escaping @Sendable (Int) -> Void
) -> Bool {
    startThreads(count, body).wait(timeout: deadline(seconds)) == .success
}

/// Starts `body(index)` on `count` dedicated threads released together; the group they leave as they return.
func startThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
    let finished = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        finished.enter()
        Thread.detachNewThread {
            start.wait()
            body(index)
            finished.leave()
        }
    }
    for _ in 0..<count { start.signal() }
    return finished
}

/// Runs `body` on one new thread and returns at once.
public func onNewThread(_ body: @escaping @Sendable () -> Void) {
    Thread.detachNewThread(body)
}

/// Bytes a child process wrote to standard error, as text.
public func text(_ bytes: [UInt8]?) -> String {
    String(decoding: bytes ?? [], as: UTF8.self)
}

/// Runs `body` on the main queue and waits, for at most ``patienceSeconds``, until it returned.
///
/// - Returns: `false` if `body` had not run within the deadline (the main queue is not being drained).
@discardableResult
public func onMainQueue(_ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.main.async {
        body()
        done.signal()
    }
    return done.wait(timeout: deadline()) == .success
}

/// Polls `condition` until it holds, for at most ``patienceSeconds``.
///
/// For waiting until a thread has parked somewhere observable (a precondition of a test), never as a test's proof.
/// - Returns: `false` if the condition still did not hold at the deadline.
public func eventually(_ condition: () -> Bool) -> Bool {
    let limit = deadline()
    while !condition() {
        if DispatchTime.now() > limit { return false }
        Thread.sleep(forTimeInterval: 0.000_1)
    }
    return true
}

/// Polls `condition` until it holds, for at most ``patienceSeconds``, suspending the task between looks.
///
/// The async form of `eventually(_:)`: it blocks no thread of the cooperative pool.
public func suspendUntil(
    isolation: isolated (any Actor)? = #isolation,
    _ condition: () -> Bool
) async -> Bool {
    let limit = deadline()
    while !condition() {
        if DispatchTime.now() > limit { return false }
        // A cancelled task's sleep throws at once: the loop would spin on a thread of the pool (two here), with
        // Swift Testing capturing a backtrace at every throw, and starve every other test. A cancelled task (a
        // test past its time limit) gives up instead.
        if Task.isCancelled { return false }
        try? await Task.sleep(for: .microseconds(100))
    }
    return true
}

/// Counts how many callers are inside a section at once, and the most there ever were.
public final class ConcurrencyGauge: Sendable {
    private let state = AtomicBox((inside: 0, peak: 0))

    /// Creates a gauge at zero.
    public init() {}

    /// The most callers that were inside at the same time.
    public var peak: Int { self.state.value.peak }

    /// Runs `body` counted as inside.
    public func measure<Result>(_ body: () throws -> Result) rethrows -> Result {
        self.state.mutate { state in
            state.inside += 1
            state.peak = max(state.peak, state.inside)
        }
        defer { self.state.mutate { $0.inside -= 1 } }
        return try body()
    }
}

/// A dispatch queue that can tell whether the caller runs on it, by a queue-specific key of its own.
public final class TaggedQueue: Sendable {
    /// The queue.
    public let queue: DispatchQueue
    private let key = DispatchSpecificKey<Bool>()

    /// Creates a serial queue, or one with `attributes`.
    public init(_ label: String, attributes: DispatchQueue.Attributes = []) {
        self.queue = DispatchQueue(label: label, attributes: attributes)
        self.queue.setSpecific(key: self.key, value: true)
    }

    /// Whether the caller runs on the queue.
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: self.key) == true }

    /// Waits, for at most ``patienceSeconds``, until every block sent to the queue so far has run.
    public func drain() -> Bool {
        let drained = DispatchSemaphore(value: 0)
        self.queue.async { drained.signal() }
        return drained.wait(timeout: deadline()) == .success
    }
}

/// A round number two threads spin on, so that what each does next really races (a semaphore would let one of them
/// wake microseconds late).
public final class SpinFlag: Sendable {
    private let round = Atomic<Int>(0)

    /// Creates a flag at round 0.
    public init() {}

    /// Publishes `round`.
    public func set(_ round: Int) {
        self.round.store(round, ordering: .releasing)
    }

    /// Spins until the flag reaches `round`, for at most ``patienceSeconds``.
    ///
    /// - Returns: `false` at the deadline.
    public func spin(until round: Int) -> Bool {
        let limit = deadline()
        while self.round.load(ordering: .acquiring) < round {
            if DispatchTime.now() > limit { return false }
        }
        return true
    }

    /// Burns a moment without a system call.
    public func pause() {
        _ = self.round.load(ordering: .relaxed)
    }
}

/// The process's resident memory in bytes, from `/proc/self/statm`; 0 where that does not exist.
public func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Whether AddressSanitizer or ThreadSanitizer is linked into this process.
public let runningUnderSanitizer: Bool = {
    let process = dlopen(nil, RTLD_NOW)
    defer { if let process { dlclose(process) } }
    return dlsym(process, "__asan_init") != nil || dlsym(process, "__tsan_init") != nil
}()
