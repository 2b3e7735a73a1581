import AtomicPrimitives
import Dispatch
import Foundation

/// A serial executor with two threads of its own that take turns.
///
/// Each job runs on the other thread than the job before it. An actor on it (``unownedExecutor`` of an actor that returns ``asUnownedSerialExecutor()``) therefore
/// resumes on the other thread after every suspension, `Task.yield()` included, which the global pool does only now
/// and then.
///
/// Call ``shutDown()`` once its actor is done: it ends both threads.
public final class AlternatingThreadsExecutor: SerialExecutor, @unchecked Sendable {
    // Safety: `jobs` and `lastLine` are guarded by `lock`; `running` keeps the jobs serial, as an actor needs.
    private let lock = MutexLock()
    private var jobs: [[UnownedJob?]] = [[], []]
    private var lastLine = 1
    private let running = MutexLock()
    private let ready = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
    private let ended = DispatchSemaphore(value: 0)

    /// Starts the two threads.
    public init() {
        for line in 0..<2 {
            Thread { self.run(line) }.start()
        }
    }

    private func run(_ line: Int) {
        while true {
            self.ready[line].wait()
            guard let job = self.lock.withLock({ self.jobs[line].removeFirst() }) else { break }
            self.running.withLock {
                self.lock.withLock { self.lastLine = line }
                job.runSynchronously(on: self.asUnownedSerialExecutor())
            }
        }
        self.ended.signal()
    }

    /// Runs `job` on the thread that did not run the job before it.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let line = self.lock.withLock {
            let line = 1 - self.lastLine
            self.jobs[line].append(unowned)
            return line
        }
        self.ready[line].signal()
    }

    /// Ends both threads once they have run what was enqueued before, and waits for them.
    ///
    /// - Returns: Whether both ended before the suite's deadline.
    @discardableResult
    public func shutDown() -> Bool {
        self.lock.withLock {
            self.jobs[0].append(nil)
            self.jobs[1].append(nil)
        }
        self.ready[0].signal()
        self.ready[1].signal()
        return (0..<2).allSatisfy { _ in self.ended.wait(timeout: deadline()) == .success }
    }
}
