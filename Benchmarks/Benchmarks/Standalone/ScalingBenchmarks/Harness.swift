// The measuring side of the scaling benchmark: threads released together, wall time, a limit per run, medians.

import Dispatch
import Synchronization

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// What one measurement gives: the wall time it took and how many operations it ran.
struct Sample {
    let nanoseconds: UInt64
    let operations: Int

    var nanosecondsPerOperation: Double { Double(self.nanoseconds) / Double(max(self.operations, 1)) }
}

/// The body one thread of a team runs, boxed for `pthread_create`.
private final class ThreadBody {
    let index: Int
    let gate: UnsafeMutablePointer<pthread_rwlock_t>
    let ready: DispatchGroup
    let body: (Int) -> Void

    init(
        index: Int,
        gate: UnsafeMutablePointer<pthread_rwlock_t>,
        ready: DispatchGroup,
        body: @escaping (Int) -> Void
    ) {
        self.index = index
        self.gate = gate
        self.ready = ready
        self.body = body
    }

    func run() {
        self.ready.leave()
        // The starting thread holds the gate for writing until every thread is ready: all start together.
        pthread_rwlock_rdlock(self.gate)
        pthread_rwlock_unlock(self.gate)
        self.body(self.index)
    }
}

/// What one measurement runs: how many threads (or tasks, or the width of a queue), how many operations each, and
/// the wall time after which the threads are told to stop early.
struct Load {
    let threads: Int
    let perThread: Int
    /// Nanoseconds after which a hammer stops its threads after their current operation, so that a contender that
    /// collapses under contention cannot hold the run up; the sample then counts the operations done.
    let limit: UInt64
}

/// A flag the measuring thread raises when a measurement passes its limit.
private final class StopFlag: Sendable {
    let isRaised = Atomic<Bool>(false)
}

/// How many operations each thread or task of a measurement ran.
private final class Tallies: @unchecked Sendable {  // Safety: each slot is written by its own thread before it ends.
    private let slots: UnsafeMutableBufferPointer<Int>

    init(_ count: Int) { self.slots = .allocate(capacity: count) }

    deinit { self.slots.deallocate() }

    subscript(index: Int) -> Int {
        get { self.slots[index] }
        set { self.slots[index] = newValue }
    }

    var total: Int { self.slots.reduce(0, +) }
}

/// Runs `body(index)` on `count` new threads started together; returns the wall nanoseconds to the last one's end.
///
/// Creating the threads is not counted: the clock starts when every thread is ready and the gate opens. Past `limit`
/// nanoseconds, `stop` is raised (the body is expected to check it) and the threads are then waited for.
private func onThreads(
    _ count: Int,
    limit: UInt64,
    stop: StopFlag,
    _ body: @escaping @Sendable (Int) -> Void
) -> UInt64 {
    let gate = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    precondition(pthread_rwlock_init(gate, nil) == 0, "ScalingBenchmarks: pthread_rwlock_init failed")
    defer {
        pthread_rwlock_destroy(gate)
        gate.deallocate()
    }
    pthread_rwlock_wrlock(gate)
    let ready = DispatchGroup()
    let finished = DispatchGroup()
    var threads: [pthread_t] = []
    for index in 0..<count {
        ready.enter()
        finished.enter()
        let box = Unmanaged.passRetained(
            ThreadBody(index: index, gate: gate, ready: ready) { index in
                body(index)
                finished.leave()
            }
        )
        var thread = pthread_t()
        let created = pthread_create(
            &thread,
            nil,
            { argument in
                Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue().run()
                return nil
            },
            box.toOpaque()
        )
        precondition(created == 0, "ScalingBenchmarks: pthread_create failed with \(created)")
        threads.append(thread)
    }
    ready.wait()
    let start = monotonicNanoseconds()
    pthread_rwlock_unlock(gate)
    if finished.wait(timeout: .now() + .nanoseconds(Int(limit))) == .timedOut {
        stop.isRaised.store(true, ordering: .relaxed)
    }
    for thread in threads { pthread_join(thread, nil) }
    return monotonicNanoseconds() - start
}

/// Runs `load.threads` threads, each calling `operation(thread, index)` up to `load.perThread` times, all stopped
/// after their current operation once the measurement passes `load.limit`.
func hammer(_ load: Load, _ operation: @escaping @Sendable (Int, Int) -> Void) -> Sample {
    let stop = StopFlag()
    let tallies = Tallies(load.threads)
    let perThread = load.perThread
    let nanoseconds = onThreads(load.threads, limit: load.limit, stop: stop) { thread in
        var index = 0
        while index < perThread && !stop.isRaised.load(ordering: .relaxed) {
            operation(thread, index)
            index += 1
        }
        tallies[thread] = index
    }
    return Sample(nanoseconds: nanoseconds, operations: tallies.total)
}

/// A result a task hands to the blocked thread that waits for it.
private final class Handoff: @unchecked Sendable {  // Safety: written before `done.signal()`, read after `wait()`.
    let done = DispatchSemaphore(value: 0)
    var nanoseconds: UInt64 = 0
}

/// Runs `load.threads` tasks, each calling `operation(task, index)` up to `load.perThread` times.
///
/// Called from a thread that is not in a task. The wall time counts from before the first task starts to the end of
/// the last. Past `load.limit`, the tasks stop after their current operation.
func hammerTasks(_ load: Load, _ operation: @escaping @Sendable (Int, Int) async -> Void) -> Sample {
    let handoff = Handoff()
    let stop = StopFlag()
    let tallies = Tallies(load.threads)
    let (count, perTask) = (load.threads, load.perThread)
    Task.detached {
        let start = monotonicNanoseconds()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<count {
                group.addTask {
                    var index = 0
                    while index < perTask && !stop.isRaised.load(ordering: .relaxed) {
                        await operation(task, index)
                        index += 1
                    }
                    tallies[task] = index
                }
            }
        }
        handoff.nanoseconds = monotonicNanoseconds() - start
        handoff.done.signal()
    }
    if handoff.done.wait(timeout: .now() + .nanoseconds(Int(load.limit))) == .timedOut {
        stop.isRaised.store(true, ordering: .relaxed)
        handoff.done.wait()
    }
    return Sample(nanoseconds: handoff.nanoseconds, operations: tallies.total)
}

/// The median of `values` (the lower middle one for an even count).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[(sorted.count - 1) / 2]
}
