import ConcurrencyKit
import Dispatch
import Foundation

/// Threads sharing a counter, a lock-guarded log, a semaphore that admits two workers at a time, and a barrier.
enum AtomicPrimitivesScene {
    static func run() {
        print("== AtomicPrimitives")
        countWithAtomicBox()
        limitWithCountingSemaphore()
        waitAtBarrier()
    }

    /// Four threads increment one `AtomicBox` 100,000 times each: no update is lost.
    private static func countWithAtomicBox() {
        let counter = AtomicBox(0)
        let threads = 4
        let perThread = 100_000
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<perThread {
                counter.mutate { $0 += 1 }
            }
        }
        print(
            "AtomicBox: \(threads) threads x \(perThread) increments = \(counter.value) (expected \(threads * perThread))"
        )
    }

    /// Six jobs on six threads share a semaphore with two resources: never more than two run at once.
    ///
    /// A `MutexLock` guards the log they write.
    private static func limitWithCountingSemaphore() {
        let slots = CountingSemaphore(.counting(2))
        let running = AtomicBox(0)
        let peak = AtomicBox(0)
        let logLock = MutexLock()
        nonisolated(unsafe) var log: [String] = []  // guarded by `logLock`
        let jobs = DispatchGroup()
        for job in 0..<6 {
            // A thread of its own for each job, as the summary says: on a pool as small as the machine's core count,
            // fewer jobs would be running than the semaphore allows, and the peak would say less about it.
            jobs.enter()
            Thread.detachNewThread {
                defer { jobs.leave() }
                slots.perform {
                    let now = running.mutate { count -> Int in
                        count += 1
                        return count
                    }
                    peak.mutate { $0 = max($0, now) }
                    logLock.withLock { log.append("job \(job) ran with \(now) inside") }
                    Thread.sleep(forTimeInterval: 0.05)  // simulated work, so that jobs overlap
                    running.mutate { $0 -= 1 }
                }
            }
        }
        _ = jobs.wait(timeout: .now() + .seconds(10))
        let entries = logLock.withLock { log.count }
        print("CountingSemaphore(.counting(2)): \(entries) jobs ran, at most \(peak.value) at once")
    }

    /// A worker waits at a barrier semaphore until the main thread has prepared its input.
    private static func waitAtBarrier() {
        let ready = CountingSemaphore(.barrier)
        let finished = CountingSemaphore(.barrier)
        let input = AtomicBox<[Int]>([])
        DispatchQueue.global().async {
            ready.wait()
            print("CountingSemaphore(.barrier): worker released, sums \(input.value) = \(input.value.reduce(0, +))")
            finished.signal()
        }
        input.mutate { $0 = [1, 2, 3, 4] }
        print("CountingSemaphore(.barrier): input ready, signalling the worker")
        ready.signal()
        if finished.wait(.now() + .seconds(5)) == .timedOut {
            print("CountingSemaphore(.barrier): the worker did not finish in 5 s")
        }
    }
}
