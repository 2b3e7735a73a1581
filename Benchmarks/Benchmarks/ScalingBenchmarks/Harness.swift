// The measuring side of the scaling benchmark: threads released together, wall time, contenders in turns, medians.

import Dispatch

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
    let body: @Sendable (Int) -> Void

    init(
        index: Int,
        gate: UnsafeMutablePointer<pthread_rwlock_t>,
        ready: DispatchGroup,
        body: @escaping @Sendable (Int) -> Void
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

/// Runs `body(index)` on `count` new threads started together; returns the wall nanoseconds to the last one's end.
///
/// Creating the threads is not counted: the clock starts when every thread is ready and the gate opens.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> UInt64 {
    let gate = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    precondition(pthread_rwlock_init(gate, nil) == 0, "ScalingBenchmarks: pthread_rwlock_init failed")
    defer {
        pthread_rwlock_destroy(gate)
        gate.deallocate()
    }
    pthread_rwlock_wrlock(gate)
    let ready = DispatchGroup()
    var threads: [pthread_t] = []
    for index in 0..<count {
        ready.enter()
        let box = Unmanaged.passRetained(ThreadBody(index: index, gate: gate, ready: ready, body: body))
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
    for thread in threads { pthread_join(thread, nil) }
    return monotonicNanoseconds() - start
}

/// Runs `operations` on `count` threads, each calling `operation(thread, index)` `perThread` times.
func hammer(_ count: Int, _ perThread: Int, _ operation: @escaping @Sendable (Int, Int) -> Void) -> Sample {
    let nanoseconds = onThreads(count) { thread in
        for index in 0..<perThread { operation(thread, index) }
    }
    return Sample(nanoseconds: nanoseconds, operations: count * perThread)
}

/// A result a task hands to the blocked thread that waits for it.
private final class Handoff: @unchecked Sendable {  // Safety: written before `done.signal()`, read after `wait()`.
    let done = DispatchSemaphore(value: 0)
    var nanoseconds: UInt64 = 0
}

/// Runs `count` tasks, each calling `operation(task, index)` `perTask` times, from a thread that is not in a task;
/// the wall time counts from before the first task starts to the end of the last.
func hammerTasks(
    _ count: Int,
    _ perTask: Int,
    _ operation: @escaping @Sendable (Int, Int) async -> Void
) -> Sample {
    let handoff = Handoff()
    Task.detached {
        let start = monotonicNanoseconds()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<count {
                group.addTask {
                    for index in 0..<perTask { await operation(task, index) }
                }
            }
        }
        handoff.nanoseconds = monotonicNanoseconds() - start
        handoff.done.signal()
    }
    handoff.done.wait()
    return Sample(nanoseconds: handoff.nanoseconds, operations: count * perTask)
}

/// The median of `values` (the lower middle one for an even count).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[(sorted.count - 1) / 2]
}
