import AtomicPrimitives
import Dispatch
import Synchronization

/// The value and its command queue: what pending commands keep alive after the holder is gone.
///
/// Whoever holds the turn (see ``TurnQueue``) may read and write `value` without the lock: the turn is handed over
/// under the lock, and every hand-over goes through a semaphore, a dispatch or a continuation, so each holder sees
/// the writes of the one before.
final class ValueStorage<Value>: @unchecked Sendable {
    /// How a waiting command is told that the turn is now its own.
    enum Waiter {
        /// A thread blocked in a `wait` command.
        case thread(CountingSemaphore)
        /// An `async` command: its job is sent to its queue.
        case job(DispatchQueue, @Sendable () -> Void)
        /// A suspended `suspend` command: resumed with `true`.
        case task(UnsafeContinuation<Bool, Never>)

        func grant() {
            switch self {
            case .thread(let semaphore): semaphore.signal()
            case .job(let queue, let job): queue.async(execute: job)
            case .task(let continuation): continuation.resume(returning: true)
            }
        }
    }

    // Safety: `turns` and `nextWaiterID` are only touched while `lock` is held; `value` only by the turn holder.
    private let lock = MutexLock()
    private var turns = TurnQueue<Waiter>()
    private var nextWaiterID: UInt64 = 0
    var value: Value

    /// The thread running one of this value's command closures, or 0.
    private let closureThread = Atomic<UInt>(0)

    init(_ value: Value) {
        self.value = value
    }

    /// How many commands wait for the turn now.
    var waitingCount: Int {
        self.lock.withLock { self.turns.waitingCount }
    }

    // MARK: Taking the turn

    /// Blocks the calling thread until it holds the turn.
    func acquireBlocking(_ priority: CommandPriority) {
        if self.lock.withLock({ self.turns.tryAcquire() }) { return }
        let semaphore = CountingSemaphore(.barrier)
        let acquired = self.lock.withLock { () -> Bool in
            guard !self.turns.tryAcquire() else { return true }
            self.nextWaiterID &+= 1
            self.turns.enqueue(.thread(semaphore), id: self.nextWaiterID, priority: priority)
            return false
        }
        if !acquired { semaphore.wait() }
    }

    /// Sends `job` to `queue` once it holds the turn, at once if the turn is free.
    ///
    /// Never blocks.
    func submit(_ priority: CommandPriority, on queue: DispatchQueue, job: @escaping @Sendable () -> Void) {
        let acquired = self.lock.withLock { () -> Bool in
            guard !self.turns.tryAcquire() else { return true }
            self.nextWaiterID &+= 1
            self.turns.enqueue(.job(queue, job), id: self.nextWaiterID, priority: priority)
            return false
        }
        if acquired { queue.async(execute: job) }
    }

    /// Suspends the calling task until it holds the turn, without blocking a thread.
    ///
    /// - Returns: `false` if the task was cancelled before it got the turn; it then does not hold it.
    func acquireSuspending(_ priority: CommandPriority) async -> Bool {
        if Task.isCancelled { return false }
        let id = self.lock.withLock { () -> UInt64? in
            guard !self.turns.tryAcquire() else { return nil }
            self.nextWaiterID &+= 1
            return self.nextWaiterID
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
                let immediate = self.lock.withLock { () -> Bool? in
                    if self.turns.tryAcquire() { return true }
                    if Task.isCancelled { return false }
                    self.turns.enqueue(.task(continuation), id: id, priority: priority)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            if case .task(let continuation)? = self.lock.withLock({ self.turns.remove(id: id) }) {
                continuation.resume(returning: false)
            }
        }
    }

    /// Ends the caller's turn and hands it to the next waiter, after running `beforeHandOver`.
    func release(beforeHandOver: () -> Void = {}) {
        let next = self.lock.withLock { self.turns.release() }
        beforeHandOver()
        next?.grant()
    }

    // MARK: Running closures

    /// Runs a command closure on the value, recording the thread so that a nested `wait` fails fast.
    func runClosure<Result>(_ body: (inout Value) -> Result) -> Result {
        let previous = self.closureThread.exchange(currentThreadID(), ordering: .relaxed)
        defer { self.closureThread.store(previous, ordering: .relaxed) }
        return body(&self.value)
    }

    /// Whether one of this value's command closures runs on the calling thread.
    var isRunningClosureOnCurrentThread: Bool {
        self.closureThread.load(ordering: .relaxed) == currentThreadID()
    }
}
