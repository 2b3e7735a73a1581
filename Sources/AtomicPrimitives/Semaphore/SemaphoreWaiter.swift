import Dispatch
import Synchronization

/// One caller waiting in a ``CountingSemaphore``: a blocked thread or a suspended task, in the FIFO line.
///
/// Every `var` is read and written only while the semaphore's lock is held.
final class SemaphoreWaiter: @unchecked Sendable {  // Safety: every var is guarded by the semaphore's lock.
    /// Where the waiter is in its life; it leaves `.queued` exactly once.
    enum State {
        /// A task that has not reached the line yet: its cancellation may come first.
        case arriving
        /// In the line.
        case queued
        /// A `signal()` handed it a resource.
        case granted
        /// Left without a resource: its task was cancelled.
        case cancelled
        /// Left without a resource: its deadline passed.
        case timedOut
    }

    var state: State
    /// A blocked thread's own grant, which it watches and then sleeps on; `nil` for a task.
    let thread: ParkedThread?
    /// Set for a suspended task in the line; `nil` for a blocked thread.
    var continuation: UnsafeContinuation<State, Never>?
    /// The timer of a task's deadline while the task is in the line; whoever takes the task out of the line cancels
    /// it at once, so that no timer outlives its wait.
    var timer: (any DispatchSourceTimer)?
    /// The task that sleeps until the deadline on a clock other than the standard ones, from the moment it starts (the
    /// task may still be arriving); cancelled, like ``timer``, by whoever ends the wait, so that it leaves its clock
    /// at once.
    var sleeper: Task<Void, Never>?
    fileprivate var next: SemaphoreWaiter?
    fileprivate var previous: SemaphoreWaiter?
    /// Whether this waiter is counted in ``liveWithDeadline``.
    private let hasDeadline: Bool
    /// Set, releasing, when the wait ends in the line, under the semaphore's lock and before its task is resumed.
    ///
    /// The task reads it, acquiring, once it is back (``observeEnding()``): a happens-before edge from whoever ended
    /// the wait (a `signal()` and what came before it) to the task, also when the task was resumed before it had
    /// finished suspending, an order the Swift runtime keeps with atomics that ThreadSanitizer does not see.
    private let ended = Atomic<Bool>(false)

    /// How many waiters with a deadline exist in the process, for tests: a deadline's timer holds its waiter, so a
    /// timer that outlives its wait shows here.
    package static let liveWithDeadline = Atomic<Int>(0)

    /// A task's waiter, arriving at the line.
    init(state: State, hasDeadline: Bool = false) {
        self.state = state
        self.thread = nil
        self.hasDeadline = hasDeadline
        if hasDeadline { Self.liveWithDeadline.add(1, ordering: .relaxed) }
    }

    /// A blocked thread's waiter, about to join the line.
    init(thread: ParkedThread) {
        self.state = .arriving
        self.thread = thread
        self.hasDeadline = false
    }

    deinit {
        if self.hasDeadline { Self.liveWithDeadline.subtract(1, ordering: .relaxed) }
    }

    /// Grants the waiter, which has just left the line, a resource; call with the semaphore's lock held.
    ///
    /// - Returns: What must be done once the lock is released; `nil` if the waiter is a thread whose deadline won the
    ///   race with this grant: it has left without the resource, which goes to the next waiter.
    func grant() -> Ending? {
        guard let thread = self.thread else { return self.end(as: .granted) }
        switch thread.handOver() {
        case .timedOut:
            self.state = .timedOut
            return nil
        case .running:
            self.state = .granted
            return Ending(outcome: .granted, continuation: nil, timer: nil, sleeper: nil, sleepingThread: nil)
        case .sleeping:
            self.state = .granted
            return Ending(outcome: .granted, continuation: nil, timer: nil, sleeper: nil, sleepingThread: thread)
        }
    }

    /// Ends the wait with `outcome` and takes out what must be done once the lock is released.
    ///
    /// Call with the semaphore's lock held, on a waiter that has just left the line.
    /// Pairs with ``end(as:)``: call it on the waiting task once it is resumed.
    func observeEnding() {
        _ = self.ended.load(ordering: .acquiring)
    }

    func end(as outcome: State) -> Ending {
        self.state = outcome
        self.ended.store(true, ordering: .releasing)
        defer {
            self.continuation = nil
            self.timer = nil
            self.sleeper = nil
        }
        return Ending(
            outcome: outcome,
            continuation: self.continuation,
            timer: self.timer,
            sleeper: self.sleeper,
            sleepingThread: nil
        )
    }

    /// What ends a wait, done by ``complete()`` after the semaphore's lock is released: the deadline's timer or
    /// sleeper is cancelled, and a suspended task resumed or a sleeping thread woken.
    struct Ending {
        let outcome: State
        let continuation: UnsafeContinuation<State, Never>?
        let timer: (any DispatchSourceTimer)?
        let sleeper: Task<Void, Never>?
        /// A granted thread that sleeps: only it is woken.
        let sleepingThread: ParkedThread?

        /// Cancels the timer or the sleeper and resumes the task or wakes the thread, if there are any.
        func complete() {
            self.timer?.cancel()
            self.sleeper?.cancel()
            self.continuation?.resume(returning: self.outcome)
            self.sleepingThread?.wake()
        }
    }
}

/// The line of a ``CountingSemaphore``'s waiters, oldest first: append, take the oldest, or remove any in O(1).
///
/// Not thread-safe: the semaphore's lock guards it.
struct SemaphoreWaiterLine {
    private var head: SemaphoreWaiter?
    private var tail: SemaphoreWaiter?
    private(set) var count = 0

    var isEmpty: Bool { self.head == nil }

    mutating func append(_ waiter: SemaphoreWaiter) {
        waiter.state = .queued
        waiter.previous = self.tail
        if let tail = self.tail { tail.next = waiter } else { self.head = waiter }
        self.tail = waiter
        self.count += 1
    }

    /// Takes the oldest waiter out of the line, or returns `nil` if the line is empty.
    mutating func removeFirst() -> SemaphoreWaiter? {
        guard let head = self.head else { return nil }
        self.remove(head)
        return head
    }

    /// Takes `waiter`, which must be in this line, out of it.
    mutating func remove(_ waiter: SemaphoreWaiter) {
        if let previous = waiter.previous { previous.next = waiter.next } else { self.head = waiter.next }
        if let next = waiter.next { next.previous = waiter.previous } else { self.tail = waiter.previous }
        waiter.next = nil
        waiter.previous = nil
        self.count -= 1
    }
}
