import AtomicPrimitives
import Synchronization

/// One subscriber of a ``CallbackSubject``: a mailbox of events delivered one at a time, in order, on its route.
///
/// The subject puts each event into every subscriber's mailbox under its own lock, so all subscribers see the same
/// order; then, outside it, it starts a drain for each mailbox it found idle (the only subscriber on `untouch` has a
/// faster way, below). A drain delivers events on the
/// subscriber's ``CallbackQueue`` until the mailbox is empty. So calls to one subscriber never overlap and follow
/// send order whatever the route — also when a callback sends or completes — and a value sent from inside the
/// subscriber's own callback is delivered after that callback returns.
///
/// No lock is held while a callback runs: the drain takes each event under the mailbox's lock, releases it, looks at
/// ``isCancelled`` once more, and then calls. ``close()`` sets ``isCancelled`` first and then closes the mailbox under
/// that lock, so it never waits for a callback: a drain that took its event before the close still sees the flag
/// before it calls. That last look is where a call starts: none starts after ``close()`` returns, though a drain
/// descheduled between its look and the call reaches the callback's first line later. (See ``SubjectMailbox`` for the
/// rules.)
///
/// The callbacks, and what they capture, are released once nothing can call them any more: when the completion has
/// been delivered, or when the subscriber is closed, as a Combine `Sink` lets go of its closures. A callback that
/// captures the object keeping its subscription (`self.subscription = subject.subscribe { self.… }`) makes no cycle
/// that outlives the subscription's end. A drain that runs when the subscriber is closed keeps them until it ends.
///
/// While the subscriber is its subject's only one, on ``CallbackQueue/untouch``, the subject's ``SubjectSoleLane`` may
/// hold its drain: a send then claims it there with one compare-exchange, delivers with ``deliverInLane(_:lane:)``, and
/// lets go with another; senders that find it busy put their values in the mailbox for the holder
/// (``enqueueInLane(_:lane:)``, ``finishLaneDrain(lane:)``). The rules above hold on that path too: the holder is the
/// subscriber's one drain, and looks at ``isCancelled`` right before each call.
///
/// The send path is `@inlinable`, so that it is specialized in the sender's module for the subject's types:
/// unspecialized, most of a send's time went to looking up generic metadata (the lane's slow end too: 536-911 ns per
/// contended send at 2 threads, against 25-65 ns specialized).
@usableFromInline
final class SubjectSubscriber<Output: Sendable, Failure: Error>: @unchecked Sendable {
    // Safety: `callbacks`, the only var, is read by the running drain only (the holder of the subject's lane is that
    // drain), and released and set to nil once, outside the lock, by the one the mailbox names under its lock (see
    // SubjectMailbox): while a drain runs nobody else writes or releases it, and once it is nil no drain runs again. Every other stored property is a `let` of a
    // Sendable type.
    @usableFromInline typealias Event = SubjectMailbox<Output, Failure>.Event

    /// The subscriber's two callbacks, in one object, retained and released as one.
    @usableFromInline
    final class Callbacks: Sendable {
        @usableFromInline let receiveValue: @Sendable (Output) -> Void
        @usableFromInline let receiveCompletion: @Sendable (SubjectCompletion<Failure>) -> Void

        init(
            receiveValue: @escaping @Sendable (Output) -> Void,
            receiveCompletion: @escaping @Sendable (SubjectCompletion<Failure>) -> Void
        ) {
            self.receiveValue = receiveValue
            self.receiveCompletion = receiveCompletion
        }
    }

    @usableFromInline let route: CallbackQueue
    /// The callbacks, retained once, until nothing can call them any more.
    ///
    /// `nil` from then on. See "Safety" above for who reads and releases them.
    ///
    /// That rule, not the runtime, keeps them alive and their accesses exclusive: a drain calls them without
    /// retaining them, as it called the `let`s they were before. A retain and release per drain, and the runtime's
    /// exclusivity check, made a send to 10 `untouch` subscribers a quarter slower (655 ns against 521).
    @usableFromInline
    @exclusivity(unchecked)
    var callbacks: Unmanaged<Callbacks>?
    /// Whether the subscriber receives `.finished` when the subject is released without a completion.
    let finishesWithSubject: Bool
    @usableFromInline let mailbox = AtomicBox(SubjectMailbox<Output, Failure>())
    /// Set by ``close()`` before it does anything else, for a drain to look at right before each call, without
    /// taking the mailbox's lock again: the call starts only if the flag is still clear then.
    ///
    /// Taking the event from the mailbox is not the start: a close can land between the take and the call (the
    /// mailbox's lock, released with a waiter, wakes that close first), and the call must not start after it.
    @usableFromInline let isCancelled = Atomic<Bool>(false)

    init(
        route: CallbackQueue,
        finishesWithSubject: Bool,
        receiveValue: @escaping @Sendable (Output) -> Void,
        receiveCompletion: @escaping @Sendable (SubjectCompletion<Failure>) -> Void
    ) {
        self.route = route
        self.finishesWithSubject = finishesWithSubject
        self.callbacks = .passRetained(Callbacks(receiveValue: receiveValue, receiveCompletion: receiveCompletion))
    }

    deinit {
        self.callbacks?.release()  // nil unless the subscriber was never closed nor completed
    }

    /// Puts `event` in the mailbox; call ``startDrainIfScheduled()`` afterwards, outside every lock.
    ///
    /// The subject calls this under its own lock for every subscriber, so that all of them get events in one order.
    @inlinable
    func enqueue(_ event: Event) {
        self.mailbox.mutate { mailbox -> Void in mailbox.put(event) }
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
        return self.mailbox.mutate { $0.putClaimingDrain(value, keepingOut: untouched) }
    }

    /// Puts a value in the mailbox that the subject's armed ``SubjectSoleLane`` holds, under the subject's lock, and
    /// notes it there.
    ///
    /// - Returns: Whether the caller now holds the lane's drain, and must call ``finishLaneDrain(lane:)`` outside
    ///   every lock; `false` once the subscriber is closed, or when the lane's holder delivers the value.
    @inlinable
    func enqueueInLane(_ value: Output, lane: SubjectSoleLane<Output, Failure>) -> Bool {
        self.mailbox.mutate { $0.put(.value(value)) && lane.notePending() }
    }

    /// Delivers `value` as the holder of the lane's drain, claimed with ``SubjectSoleLane/claim()`` or armed by the
    /// caller (``SubjectSoleLane/arm(_:)``), then lets go of the lane.
    ///
    /// - Returns: Whether the lane was disarmed meanwhile: the caller then calls ``SubjectSoleLane/vacate()``, once
    ///   out of this subscriber's methods (the lane's reference may be the subscriber's last).
    @inlinable
    func deliverInLane(_ value: Output, lane: SubjectSoleLane<Output, Failure>) -> Bool {
        chaosPoint(.mailbox)
        // The lane keeps the callbacks: the parked drain ends, and releases them, only once the lane lets go of it.
        guard let callbacks = self.callbacks else {
            halt(
                "SubjectSubscriber: the subject's lane holds a subscriber whose callbacks were released"
            )
        }
        self.deliver(.value(value), with: callbacks)
        return lane.releaseClaim(of: self) ? false : self.finishLaneDrain(lane: lane)
    }

    /// Delivers what waits in the mailbox as the holder of the lane's drain, until the lane is idle again; or, if the
    /// lane was disarmed, as the mailbox's ordinary drain, until it ends.
    ///
    /// - Returns: Whether the lane was disarmed: the caller then calls ``SubjectSoleLane/vacate()``, once out of this
    ///   subscriber's methods.
    @inlinable
    func finishLaneDrain(lane: SubjectSoleLane<Output, Failure>) -> Bool {
        guard let callbacks = self.callbacks else {
            halt(
                "SubjectSubscriber: the subject's lane holds a subscriber whose callbacks were released"
            )
        }
        while true {
            let step = self.mailbox.mutate { mailbox -> SubjectSoleLane<Output, Failure>.Step in
                if let event = mailbox.takeNextEvent() { return .deliver(event) }
                return lane.endBusy()  // under the mailbox's lock: no value is put in and left behind meanwhile
            }
            switch step {
            case .deliver(let event):
                self.deliver(event, with: callbacks)
            case .idle:
                return false
            case .disarmed:
                self.drain(first: nil)
                return true
            }
        }
    }

    /// Ends the drain that the subject's lane held while nobody was busy in it, under the subject's lock: the
    /// mailbox is empty then, and goes back to `idle`.
    ///
    /// - Returns: Whether the subscriber was closed, so that the callbacks must be released (outside every lock).
    func endParkedDrain() -> Bool {
        switch self.mailbox.mutate({ $0.takeNext() }) {
        case .end:
            return false
        case .endReleasingCallbacks:
            return true
        case .deliver:
            halt("SubjectSubscriber: an event waited in a mailbox that the subject's lane left idle")
        }
    }

    /// Starts the drain that an ``enqueue(_:)`` scheduled, unless another sender already has.
    @inlinable
    func startDrainIfScheduled() {
        if self.mailbox.mutate({ $0.claimScheduledDrain() }) { self.startDrain() }
    }

    /// Runs the drain the caller claimed, on the subscriber's route.
    ///
    /// - Parameter value: The value ``enqueueClaimingDrain(_:)`` kept out of the mailbox, on ``CallbackQueue/untouch``.
    @inlinable
    func startDrain(delivering value: Output? = nil) {
        chaosPoint(.mailbox)
        if self.route.isUntouch {
            self.drain(first: value)  // The same as going through `execute`, without allocating a closure per send.
        } else {
            self.route.execute { self.drain(first: nil) }
        }
    }

    /// Stops delivery and drops what is queued: once it returns, no call starts (a call starts at the drain's last
    /// look at ``isCancelled``).
    ///
    /// It changes state only, and waits for nothing: a callback already running, on this thread or another, finishes,
    /// and the drain that runs it stops at its next look. The callbacks are released here if no drain runs, or else
    /// by that drain when it ends.
    func close() {
        // Before the mailbox is closed: a drain that took an event, or claimed its first value, before this close,
        // looks at the flag right before it calls, and sees it.
        self.isCancelled.store(true, ordering: .sequentiallyConsistent)
        chaosPoint(.mailbox)
        // Released outside the lock: what the callbacks capture may run anything in its deinit, this cancel too.
        if self.mailbox.mutate({ $0.close() }) { self.releaseCallbacks() }
    }

    /// Releases the callbacks, and what they capture; called once, by the one the mailbox names.
    @usableFromInline
    func releaseCallbacks() {
        let callbacks = self.callbacks
        self.callbacks = nil
        callbacks?.release()
    }

    /// Delivers `first`, if any and unless the subscriber was closed meanwhile, then every event in the mailbox.
    @inlinable
    func drain(first: Output?) {
        // Nobody but this drain releases the callbacks while it runs, so it calls them without a reference of its own.
        guard let callbacks = self.callbacks else {
            halt("SubjectSubscriber: a drain started after the subscriber's callbacks were released")
        }
        // No lock is held across a callback: each event is taken under the mailbox's lock, and its call starts only
        // if the flag that close() sets first is still clear right before it.
        if let first { self.deliver(.value(first), with: callbacks) }
        while true {
            switch self.mailbox.mutate({ $0.takeNext() }) {
            case .deliver(let event):
                self.deliver(event, with: callbacks)
            case .end:
                return
            case .endReleasingCallbacks:
                self.releaseCallbacks()  // outside the lock: what they capture may run anything in its deinit
                return
            }
        }
    }

    /// Calls the subscriber with an event its drain took, unless it was closed since: the call's last look.
    @inlinable
    func deliver(_ event: Event, with callbacks: Unmanaged<Callbacks>) {
        chaosPoint(.subscriberCall)  // between the take and the last look: where a cancel may land
        // The call starts here, after one more look: a close that came since the event was taken has set the flag
        // before it returned. The drain's next take then ends it, or skips what was taken meanwhile.
        guard !self.isCancelled.load(ordering: .sequentiallyConsistent) else { return }
        switch event {
        case .value(let value):
            callbacks._withUnsafeGuaranteedRef { $0.receiveValue(value) }
        case .completion(let completion):
            callbacks._withUnsafeGuaranteedRef { $0.receiveCompletion(completion) }
        }
    }
}
