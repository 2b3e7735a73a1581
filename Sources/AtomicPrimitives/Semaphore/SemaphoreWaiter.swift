/// One caller waiting in a ``CountingSemaphore``: a blocked thread or a suspended task, in the FIFO line.
///
/// Every field is read and written only while the semaphore's lock is held.
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
    /// Set for a suspended task; `nil` for a blocked thread, which watches `state` instead.
    var continuation: UnsafeContinuation<State, Never>?
    fileprivate var next: SemaphoreWaiter?
    fileprivate var previous: SemaphoreWaiter?

    init(state: State) {
        self.state = state
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
