import AtomicPrimitives
import Synchronization

/// One subscriber of a ``CallbackSubject``: a mailbox of events delivered one at a time, in order, on its route.
///
/// The subject puts each event into every subscriber's mailbox under its own lock, so all subscribers see the same
/// order; then, outside it, it starts a drain for each mailbox it found idle. A drain delivers events on the
/// subscriber's ``CallbackQueue`` until the mailbox is empty. So calls to one subscriber never overlap and follow
/// send order whatever the route — also when a callback sends or completes — a value sent from inside the
/// subscriber's own callback is delivered after that callback returns, and no callback runs under a lock of the
/// subject or the mailbox.
///
/// The send path is `@inlinable`, so that it is specialized in the sender's module for the subject's types:
/// unspecialized, most of a send's time went to looking up generic metadata.
@usableFromInline
final class SubjectSubscriber<Output: Sendable, Failure: Error>: Sendable {
    @usableFromInline
    enum Event: Sendable {
        case value(Output)
        case completion(SubjectCompletion<Failure>)
    }

    /// Whether a drain delivers the mailbox's events.
    @usableFromInline
    enum DrainState: Sendable {
        /// No drain: the next event put in schedules one.
        case idle
        /// Events wait, and the sender that put the first of them in starts the drain.
        case scheduled
        /// A drain is on its way to the route, or runs.
        case draining
    }

    @usableFromInline
    struct Mailbox: Sendable {
        /// Events not yet delivered start at `head`; delivered ones are dropped when the mailbox empties, so the
        /// storage is reused and a steady stream of sends allocates nothing.
        @usableFromInline var events: [Event] = []
        @usableFromInline var head = 0
        @usableFromInline var drain = DrainState.idle
        /// Cancelled, or the completion was delivered: nothing more is accepted or delivered.
        @usableFromInline var isClosed = false
        /// The thread draining this subscriber's events, or 0: it holds `delivery` and may be inside a callback.
        @usableFromInline var deliveringThread: UInt = 0

        @usableFromInline
        init() {}

        @inlinable
        mutating func reset() {
            self.events.removeAll(keepingCapacity: true)
            self.head = 0
        }
    }

    @usableFromInline let route: CallbackQueue
    @usableFromInline let receiveValue: @Sendable (Output) -> Void
    @usableFromInline let receiveCompletion: @Sendable (SubjectCompletion<Failure>) -> Void
    @usableFromInline let mailbox = AtomicBox(Mailbox())
    /// Held by a drain while it takes events and runs callbacks, so that `close()` from another thread can wait for it.
    @usableFromInline let delivery = MutexLock()
    /// Set by ``close()``, for a drain to read under `delivery` without taking the mailbox's lock.
    @usableFromInline let closeRequested = Atomic<Bool>(false)

    init(
        route: CallbackQueue,
        receiveValue: @escaping @Sendable (Output) -> Void,
        receiveCompletion: @escaping @Sendable (SubjectCompletion<Failure>) -> Void
    ) {
        self.route = route
        self.receiveValue = receiveValue
        self.receiveCompletion = receiveCompletion
    }

    /// Puts `event` in the mailbox; call ``startDrainIfScheduled()`` afterwards, outside every lock.
    ///
    /// The subject calls this under its own lock for every subscriber, so that all of them get events in one order.
    @inlinable
    func enqueue(_ event: Event) {
        self.mailbox.mutate { mailbox in
            guard !mailbox.isClosed else { return }
            mailbox.events.append(event)
            if case .idle = mailbox.drain { mailbox.drain = .scheduled }
        }
    }

    /// Puts a value in the mailbox and, if no drain is scheduled or running, claims the drain for the caller, which
    /// then calls ``startDrain(delivering:)`` with the value, outside every lock.
    ///
    /// The same as ``enqueue(_:)`` followed by the caller's ``startDrainIfScheduled()``, the only call that could
    /// start the drain it scheduled, with one lock taken instead of two. On ``CallbackQueue/untouch`` the claimed
    /// value is not even put in the mailbox: the caller's drain, on this thread, delivers it first, which saves the
    /// drain a third.
    /// - Returns: Whether the caller must start the drain.
    @inlinable
    func enqueueClaimingDrain(_ value: Output) -> Bool {
        let untouched = self.route.isUntouch
        return self.mailbox.mutate { mailbox in
            guard !mailbox.isClosed else { return false }
            guard case .idle = mailbox.drain else {
                mailbox.events.append(.value(value))
                return false
            }
            mailbox.drain = .draining
            if untouched {
                mailbox.deliveringThread = currentThreadID()
            } else {
                mailbox.events.append(.value(value))
            }
            return true
        }
    }

    /// Starts the drain that an ``enqueue(_:)`` scheduled, unless another sender already has.
    @inlinable
    func startDrainIfScheduled() {
        let starts = self.mailbox.mutate { mailbox -> Bool in
            guard case .scheduled = mailbox.drain else { return false }
            mailbox.drain = .draining
            return true
        }
        if starts { self.startDrain() }
    }

    /// Runs the drain the caller claimed, on the subscriber's route.
    ///
    /// - Parameter value: The value ``enqueueClaimingDrain(_:)`` kept out of the mailbox, on ``CallbackQueue/untouch``.
    @inlinable
    func startDrain(delivering value: Output? = nil) {
        if self.route.isUntouch {
            self.drain(first: value)  // The same as going through `execute`, without allocating a closure per send.
        } else {
            self.route.execute { self.drain(first: nil) }
        }
    }

    /// Stops delivery and drops what is queued; returns once no callback of this subscriber can start any more.
    ///
    /// A callback running on another thread is waited for, since from outside it cannot be told apart from one about
    /// to start; one running on the calling thread (the subscriber cancelling itself) is not.
    func close() {
        // Before the mailbox is closed: a drain that claimed its first value before that, and takes `delivery` only
        // after this close has come and gone, sees it there.
        self.closeRequested.store(true, ordering: .sequentiallyConsistent)
        let mustWait = self.mailbox.mutate { mailbox -> Bool in
            mailbox.isClosed = true
            mailbox.reset()
            return mailbox.deliveringThread != 0 && mailbox.deliveringThread != currentThreadID()
        }
        if mustWait { self.delivery.withLock {} }
    }

    /// Delivers `first`, if any and unless the subscriber was closed meanwhile, then every event in the mailbox.
    @inlinable
    func drain(first: Output?) {
        // Held for the whole drain: `close()` from another thread waits for it only while a callback runs, and the
        // drain stops at the next event once the mailbox is closed.
        self.delivery.lock()
        defer { self.delivery.unlock() }
        if let first, !self.closeRequested.load(ordering: .sequentiallyConsistent) {
            self.receiveValue(first)
        }
        while let event = self.nextEvent() {
            switch event {
            case .value(let value):
                self.receiveValue(value)
            case .completion(let completion):
                self.receiveCompletion(completion)
            }
        }
    }

    /// The next event to deliver, recorded as being delivered on this thread; or `nil` after ending the drain.
    @inlinable
    func nextEvent() -> Event? {
        self.mailbox.mutate { mailbox -> Event? in
            guard !mailbox.isClosed, mailbox.head < mailbox.events.count else {
                mailbox.drain = .idle
                mailbox.deliveringThread = 0
                mailbox.reset()
                return nil
            }
            let event = mailbox.events[mailbox.head]
            mailbox.head += 1
            if case .completion = event {
                mailbox.isClosed = true
            }
            mailbox.deliveringThread = currentThreadID()
            return event
        }
    }
}
