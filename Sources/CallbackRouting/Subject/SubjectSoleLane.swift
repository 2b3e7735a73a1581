import Synchronization

/// A subject's fast path to its only subscriber, when that subscriber is on ``CallbackQueue/untouch``: one atomic
/// word, so that a send takes one compare-exchange to claim the subscriber's drain and one to end it, without the
/// subject's lock, a copy of its subscriber list, or the mailbox's lock.
///
/// The word holds the subscriber's address (retained once by the lane) and three flags:
/// - `armed`: the subscriber is the subject's only one, and a send may claim it here. Only the holder of the subject's
///   lock sets or clears it, and it clears it whenever the subscribers change, so while it is set the subscriber list
///   is that one subscriber and the subscriber's mailbox order is the subject's order of sends.
/// - `busy`: someone holds the subscriber's drain through the lane (delivers to it, or is about to). The subscriber's
///   mailbox stays in its `draining` state for as long as the lane holds its address (it is "parked" there), so no
///   other drain starts; the lane's holder of `busy` is that drain.
/// - `pending`: events wait in the mailbox, put there under its lock by a sender that found the lane `busy`; the
///   holder of `busy` delivers them before it lets go. Set only together with `busy`, and cleared with it.
///
/// The rules:
/// - A send claims `armed` alone (nothing busy, nothing pending) with one compare-exchange to `armed | busy`, calls
///   the subscriber with its value, and ends with one compare-exchange back to `armed`. Both fail when anything else
///   happened meanwhile, and the send then takes the slow way: under the subject's lock, and under the mailbox's.
/// - A sender under the subject's lock that finds the lane armed puts its value in the mailbox and sets
///   `busy | pending` under the mailbox's lock: if nobody was busy, it is now the drain; otherwise the busy holder
///   sees `pending` and delivers it. The holder ends (clears `busy | pending`) only under the mailbox's lock with the
///   mailbox empty, so no value is left behind.
/// - The holder of `busy` keeps the subscriber alive: the lane releases its reference only when the word goes back
///   to 0, which only a holder of the subject's lock finding the lane idle (``disarm()``) or the holder of `busy`
///   after a disarm (``vacate()``) does. A send thus calls the subscriber without retaining it.
/// - ``disarm()``, under the subject's lock, clears `armed`. If nobody is busy it also ends the parked drain at once
///   (the mailbox is empty then: `pending` implies `busy`, and other senders need the subject's lock); otherwise the
///   busy holder finds `armed` gone when it would end, delivers what waits as the mailbox's ordinary drain (which
///   then goes back to `idle`), and calls ``vacate()``.
@usableFromInline
final class SubjectSoleLane<Output: Sendable, Failure: Error>: Sendable {
    @usableFromInline typealias Subscriber = SubjectSubscriber<Output, Failure>

    /// What the holder of `busy` does after a look at the mailbox, under its lock.
    @usableFromInline
    enum Step {
        /// Deliver the event, then look again.
        case deliver(SubjectMailbox<Output, Failure>.Event)
        /// The mailbox is empty and the lane idle again: done.
        case idle
        /// The lane was disarmed: go on as the mailbox's ordinary drain, then ``vacate()`` the lane.
        case disarmed
    }

    /// The subscriber's drain, as the holder of the subject's lock left it by ``disarm()``: what to do once the lock
    /// is released.
    struct Vacated {
        /// The subscriber, with the reference the lane held.
        let subscriber: Unmanaged<Subscriber>
        /// Whether the subscriber was closed, so that the ended drain releases its callbacks.
        let releasesCallbacks: Bool

        /// Releases the callbacks if the drain must, then the lane's reference; outside every lock, since what the
        /// callbacks capture may run anything in its deinit.
        func finish() {
            if self.releasesCallbacks { self.subscriber._withUnsafeGuaranteedRef { $0.releaseCallbacks() } }
            self.subscriber.release()
        }
    }

    @inlinable static var armed: UInt { 1 }
    @inlinable static var busy: UInt { 2 }
    @inlinable static var pending: UInt { 4 }
    @inlinable static var flags: UInt { 7 }

    /// The subscriber's address and the flags; 0 when the lane holds no subscriber.
    @usableFromInline let word = Atomic<UInt>(0)

    @usableFromInline
    init() {}

    /// Claims the armed, idle lane's subscriber for a send, or `nil` if the send must take the slow way.
    ///
    /// - Returns: The subscriber, not retained: the lane keeps it alive until the claimer lets go.
    @inlinable
    func claim() -> Unmanaged<Subscriber>? {
        let word = self.word.load(ordering: .relaxed)
        guard word & Self.flags == Self.armed,
            self.word.compareExchange(expected: word, desired: word | Self.busy, ordering: .acquiring).exchanged
        else { return nil }
        return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word & ~Self.flags).unsafelyUnwrapped)
    }

    /// Lets go of a claim if nothing happened meanwhile: no event pending, and still armed.
    ///
    /// - Returns: `false` if the claimer must look at the mailbox (``Step``) before it lets go.
    @inlinable
    func releaseClaim(of subscriber: Subscriber) -> Bool {
        let armed = UInt(bitPattern: Unmanaged.passUnretained(subscriber).toOpaque()) | Self.armed
        return self.word.compareExchange(expected: armed | Self.busy, desired: armed, ordering: .releasing).exchanged
    }

    /// Whether the lane is armed; read under the subject's lock, where it cannot change.
    @inlinable
    var isArmed: Bool { self.word.load(ordering: .relaxed) & Self.armed != 0 }

    /// Whether the lane holds no subscriber; under the subject's lock, only ``arm(_:)`` changes that afterwards.
    @inlinable
    var isVacant: Bool { self.word.load(ordering: .acquiring) == 0 }

    /// Arms the vacant lane with the subject's only subscriber, whose drain the caller just claimed, under the
    /// subject's lock; the caller holds `busy` and delivers its value as a claim from ``claim()`` would.
    @usableFromInline
    func arm(_ subscriber: Subscriber) {
        let address = UInt(bitPattern: Unmanaged.passRetained(subscriber).toOpaque())
        guarantee(address & Self.flags == 0, "SubjectSoleLane: a subscriber's address \(address) is not aligned")
        self.word.store(address | Self.armed | Self.busy, ordering: .releasing)
    }

    /// Notes an event just put in the armed lane's mailbox, under the subject's lock and the mailbox's.
    ///
    /// - Returns: Whether the caller now holds `busy`, and must deliver what waits (``Step``).
    @inlinable
    func notePending() -> Bool {
        let old = self.word.bitwiseOr(Self.busy | Self.pending, ordering: .acquiringAndReleasing).oldValue
        return old & Self.busy == 0
    }

    /// The holder of `busy` found the mailbox empty, under its lock: lets go unless the lane was disarmed.
    ///
    /// - Returns: ``Step/idle``, or ``Step/disarmed`` if the holder must go on as the mailbox's drain.
    @inlinable
    func endBusy() -> Step {
        var word = self.word.load(ordering: .relaxed)
        while word & Self.armed != 0 {
            // `pending` cannot be set meanwhile (that takes the mailbox's lock); `armed` can be cleared.
            let (exchanged, original) = self.word.compareExchange(
                expected: word,
                desired: word & ~(Self.busy | Self.pending),
                ordering: .acquiringAndReleasing
            )
            if exchanged { return .idle }
            word = original
        }
        return .disarmed
    }

    /// Disarms the lane, under the subject's lock, as its subscribers change or it ends.
    ///
    /// - Returns: What the caller does once it has released the lock, if nobody was busy; `nil` if the lane was not
    ///   armed, or if the busy holder finishes (and calls ``vacate()``).
    func disarm() -> Vacated? {
        var word = self.word.load(ordering: .relaxed)
        while word & Self.armed != 0 {
            let busy = word & Self.busy != 0
            let (exchanged, original) = self.word.compareExchange(
                expected: word,
                desired: busy ? word & ~Self.armed : 0,
                ordering: .acquiringAndReleasing
            )
            if exchanged {
                guard !busy else { return nil }
                let subscriber = Self.subscriber(in: word)
                let releasesCallbacks = subscriber._withUnsafeGuaranteedRef { $0.endParkedDrain() }
                return Vacated(subscriber: subscriber, releasesCallbacks: releasesCallbacks)
            }
            word = original
        }
        return nil
    }

    /// Empties the disarmed lane and releases its reference to the subscriber; by the holder of `busy`, once the
    /// subscriber's ordinary drain has ended, and outside the subscriber's methods.
    @usableFromInline
    func vacate() {
        let word = self.word.exchange(0, ordering: .acquiringAndReleasing)
        Self.subscriber(in: word).release()
    }

    private static func subscriber(in word: UInt) -> Unmanaged<Subscriber> {
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word & ~Self.flags).unsafelyUnwrapped)
    }
}
