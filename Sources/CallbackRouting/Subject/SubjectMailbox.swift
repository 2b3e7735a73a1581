/// The delivery state of one subscriber: the events it has not received yet, its drain, and whether it is closed.
///
/// A pure state machine: ``SubjectSubscriber`` owns the lock around it.
///
/// The rules it keeps:
/// - At most one drain at a time (``DrainState/draining``), so calls to one subscriber never overlap, and it takes
///   the events in the order they were put in.
/// - A drain takes one event per ``takeNext()``, which the subscriber calls under the lock before each callback.
///   Once ``close()`` has run, no ``takeNext()`` returns an event; an event taken just before is not yet a call: the
///   subscriber looks at its cancellation flag, which its close sets before it calls ``close()``, right before the
///   callback (``SubjectSubscriber/isCancelled``). ``close()`` changes state only, and never waits for the drain.
/// - A closed mailbox accepts nothing and drops what it held; delivering a completion closes it too.
/// - The subscriber's callbacks are released once, by whoever leaves the mailbox closed with no drain running:
///   ``close()``, if no drain runs then; or else the running drain, at the ``takeNext()`` that ends it (the one after
///   the completion, or its first look after the close). So a running drain keeps them until it ends, and nobody
///   else touches them meanwhile; once released, no drain starts again.
/// - A subject's ``SubjectSoleLane`` may hold the drain (it stays `draining`) while the subscriber is the subject's
///   only one: then whoever holds the lane's `busy` flag is the drain, and takes events with ``takeNextEvent()``.
@usableFromInline
struct SubjectMailbox<Output: Sendable, Failure: Error>: Sendable {
    /// What a subscriber receives.
    @usableFromInline
    enum Event: Sendable {
        case value(Output)
        case completion(SubjectCompletion<Failure>)
    }

    /// What the running drain does after a ``takeNext()``.
    @usableFromInline
    enum Step: Sendable {
        /// Call the subscriber with the event.
        case deliver(Event)
        /// End: the mailbox is empty. The next event put in schedules a new drain.
        case end
        /// End, and release the callbacks: the mailbox is closed, and no drain will run again.
        case endReleasingCallbacks
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

    /// Events not yet delivered start at `head`; delivered ones are dropped when the mailbox empties, so the storage is
    /// reused and a steady stream of sends allocates nothing.
    @usableFromInline var events: [Event] = []
    @usableFromInline var head = 0
    @usableFromInline var drain = DrainState.idle
    /// Cancelled, or the completion was taken: nothing more is accepted or delivered.
    @usableFromInline var isClosed = false

    @inlinable
    init() {}

    /// Puts `event` in, and schedules a drain if none is scheduled or running; nothing once closed.
    ///
    /// - Returns: Whether the event was put in: `false` once closed.
    @inlinable
    @discardableResult
    mutating func put(_ event: Event) -> Bool {
        guard !self.isClosed else { return false }
        self.events.append(event)
        if case .idle = self.drain { self.drain = .scheduled }
        return true
    }

    /// Puts `value` in and, if no drain is scheduled or running, claims the drain for the caller.
    ///
    /// - Parameters:
    ///   - value: The value sent.
    ///   - keepingOut: Whether a claimed value stays out of the mailbox, for the caller's drain to deliver first
    ///     (``CallbackQueue/untouch``, where the drain runs on the caller's thread).
    /// - Returns: Whether the caller must start the drain; `false` once closed.
    @inlinable
    mutating func putClaimingDrain(_ value: Output, keepingOut: Bool) -> Bool {
        guard !self.isClosed else { return false }
        guard case .idle = self.drain else {
            self.events.append(.value(value))
            return false
        }
        self.drain = .draining
        if !keepingOut { self.events.append(.value(value)) }
        return true
    }

    /// Claims the drain that ``put(_:)`` scheduled, unless another caller already has.
    ///
    /// - Returns: Whether the caller must start the drain.
    @inlinable
    mutating func claimScheduledDrain() -> Bool {
        guard case .scheduled = self.drain else { return false }
        self.drain = .draining
        return true
    }

    /// The running drain's next event; or the drain's end, when the mailbox is empty or closed.
    @inlinable
    mutating func takeNext() -> Step {
        if let event = self.takeNextEvent() { return .deliver(event) }
        self.drain = .idle
        return self.isClosed ? .endReleasingCallbacks : .end
    }

    /// The running drain's next event, or `nil` when the mailbox is empty or closed.
    ///
    /// On `nil` it drops what it held; the drain goes on either way: for a drain that a subject's ``SubjectSoleLane``
    /// holds, which ends there.
    @inlinable
    mutating func takeNextEvent() -> Event? {
        guard !self.isClosed, self.head < self.events.count else {
            self.dropEvents()
            return nil
        }
        let event = self.events[self.head]
        self.head += 1
        if case .completion = event { self.isClosed = true }
        return event
    }

    /// Closes the mailbox and drops what waits in it.
    ///
    /// A running drain stops at its next ``takeNext()``; nothing here waits for it.
    /// - Returns: Whether the caller releases the callbacks: it closed the mailbox, and no drain runs. Otherwise the
    ///   running drain releases them when it ends, or they were released already.
    @inlinable
    mutating func close() -> Bool {
        let wasClosed = self.isClosed
        self.isClosed = true
        self.dropEvents()
        switch self.drain {
        case .draining:
            return false
        case .scheduled:
            self.drain = .idle  // nobody needs to start it now
            return !wasClosed
        case .idle:
            return !wasClosed
        }
    }

    @inlinable
    mutating func dropEvents() {
        self.events.removeAll(keepingCapacity: true)
        self.head = 0
    }
}
