// What several benchmark targets share: the same-process baselines and the measurement configurations.

import Benchmark
import Dispatch
import Foundation

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An Int guarded by a bare heap-allocated pthread mutex: the baseline everything is compared with.
///
/// Its methods are `@inlinable`, so that they inline into each benchmark exactly as our own hot paths do.
public final class PthreadMutexCounter: @unchecked Sendable {  // Safety: `value` is only touched while `mutex` is held.
    @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// The guarded value; read it under the mutex, or after every thread has finished.
    public var value = 0

    /// Creates a counter at 0 with an initialized mutex.
    public init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Adds one under the mutex.
    @inlinable public func increment() {
        pthread_mutex_lock(mutex)
        value &+= 1
        pthread_mutex_unlock(mutex)
    }

    /// Reads the value under the mutex.
    @inlinable public func read() -> Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return value
    }
}

/// Runs `operation` `perIteration` times on the benchmark thread and on a second thread at once.
@inlinable
public func onTwoThreads(_ perIteration: Int, _ operation: @escaping @Sendable () -> Void) {
    let helper = DispatchGroup()
    DispatchQueue.global().async(group: helper) {
        for _ in 0..<perIteration { operation() }
    }
    for _ in 0..<perIteration { operation() }
    helper.wait()
}

/// 1,000 operations per measured iteration, on one thread; wall clock and mallocs.
public var uncontended: Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 100_000
    )
}

/// 1,000 operations per thread per measured iteration, on two threads; wall clock.
public var twoThreads: Benchmark.Configuration {
    .init(metrics: [.wallClock], scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 10_000)
}

/// Runs this process's threads, and every thread they start, on one CPU from now on; does nothing but on Linux.
///
/// For benchmarks that hand work to a queue's thread: on two CPUs, whether that thread runs on the CPU that just
/// wrote the work (and finds it in its cache) changes each result from run to run by more than the differences
/// measured. On one CPU every side of a comparison pays the same. Call it before registering the benchmarks.
public func pinToOneCPU() {
    #if os(Linux)
    // Glibc declares these only for _GNU_SOURCE, which Swift's Glibc module does not set.
    typealias GetCPU = @convention(c) () -> Int32
    typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    guard let getCPU = dlsym(nil, "sched_getcpu"), let setAffinity = dlsym(nil, "sched_setaffinity"),
        let tasks = opendir("/proc/self/task")
    else { return }
    defer { closedir(tasks) }
    let cpu = Int(max(unsafeBitCast(getCPU, to: GetCPU.self)(), 0))
    var cpus = [UInt](repeating: 0, count: 1024 / UInt.bitWidth)  // a cpu_set_t
    cpus[cpu / UInt.bitWidth] |= 1 << (cpu % UInt.bitWidth)
    while let entry = readdir(tasks) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        if let thread = pid_t(name) {
            _ = unsafeBitCast(setAffinity, to: SetAffinity.self)(thread, cpus.count * MemoryLayout<UInt>.size, cpus)
        }
    }
    #endif
}

// MARK: Alternating rounds

/// A ratio of ours to the alternative, in thousandths, measured within one pair of alternating rounds.
public let perMilleMetric = BenchmarkMetric.custom(
    "ratio per mille",
    polarity: .prefersSmaller,
    useScalingFactor: false
)

/// Pairs of rounds of two long batches, each pair giving one ratio.
public var alternatingRounds: Benchmark.Configuration {
    .init(metrics: [perMilleMetric], maxDuration: .seconds(6), maxIterations: 60)
}

/// Records, for each measured iteration, ours / theirs of one round of each, as `perMilleMetric`.
///
/// For batches that take milliseconds: measured one benchmark after the other, a slow spell of the machine weighs on
/// one side only, and the ratio moves by ±30% from run to run; alternating, it weighs on both alike. Which side goes
/// first changes every round.
public func alternate(_ benchmark: Benchmark, ours: () -> Double, theirs: () -> Double) {
    for round in 0..<benchmark.scaledIterations.count {
        var oursTime = 0.0
        var theirsTime = 0.0
        if round.isMultiple(of: 2) {
            oursTime = ours()
            theirsTime = theirs()
        } else {
            theirsTime = theirs()
            oursTime = ours()
        }
        benchmark.measurement(perMilleMetric, Int(1_000 * oursTime / theirsTime))
    }
}

/// As ``alternate(_:ours:theirs:)``, for rounds that `await`.
public func alternate(_ benchmark: Benchmark, ours: () async -> Double, theirs: () async -> Double) async {
    for round in 0..<benchmark.scaledIterations.count {
        var oursTime = 0.0
        var theirsTime = 0.0
        if round.isMultiple(of: 2) {
            oursTime = await ours()
            theirsTime = await theirs()
        } else {
            theirsTime = await theirs()
            oursTime = await ours()
        }
        benchmark.measurement(perMilleMetric, Int(1_000 * oursTime / theirsTime))
    }
}

/// How long `body` took, in nanoseconds.
public func nanoseconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start)
}

/// How long `body` took, in nanoseconds, for a body that `await`s.
public func nanosecondsAwaiting(_ body: () async -> Void) async -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start)
}

/// Nanoseconds to run 10,000 empty `BlockOperation`s through an `OperationQueue`, added one at a time.
public func timeOperationQueueRound() -> Double {
    let queue = OperationQueue()
    let operations = (0..<10_000).map { _ in BlockOperation {} }
    return nanoseconds {
        for operation in operations { queue.addOperation(operation) }
        queue.waitUntilAllOperationsAreFinished()
    }
}
