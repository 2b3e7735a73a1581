/// The delivery state of one subscriber: the events it has not received yet, its drain, and whether it is closed.
///
/// A pure state machine: ``SubjectSubscriber`` owns the lock around it.
///
/// The rules it keeps:
/// - At most one drain at a time (``DrainState/draining``), so calls to one subscriber never overlap, and it takes
///   the events in the order they were put in.
/// - A drain takes one event per ``takeNext()``, and the subscriber calls it, under the lock, right before each
///   callback: that is where a call starts. Once ``close()`` has run, no ``takeNext()`` returns an event, so no call
///   starts after it; ``close()`` changes state only, and never waits for the drain.
/// - A closed mailbox accepts nothing and drops what it held; delivering a completion closes it too.
@usableFromInline
struct SubjectMailbox<Output: Sendable, Failure: Error>: Sendable {
    /// What a subscriber receives.
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
    @inlinable
    mutating func put(_ event: Event) {
        guard !self.isClosed else { return }
        self.events.append(event)
        if case .idle = self.drain { self.drain = .scheduled }
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

    /// The running drain's next event; or `nil`, which ends the drain, when the mailbox is empty or closed.
    @inlinable
    mutating func takeNext() -> Event? {
        guard !self.isClosed, self.head < self.events.count else {
            self.drain = .idle
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
    @inlinable
    mutating func close() {
        self.isClosed = true
        self.dropEvents()
        if case .scheduled = self.drain { self.drain = .idle }  // nobody needs to start it now
    }

    @inlinable
    mutating func dropEvents() {
        self.events.removeAll(keepingCapacity: true)
        self.head = 0
    }
}
