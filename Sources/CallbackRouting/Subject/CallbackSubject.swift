/// A thread-safe multicast: values sent from any thread reach every subscriber, each on its own ``CallbackQueue``.
///
/// `CallbackSubject` is what a Combine `PassthroughSubject` is for, without Combine (which Linux does not have):
///
/// ```swift
/// import CallbackRouting
///
/// let progress = CallbackSubject<Double, Never>()
/// let shown = CountingSemaphore()
/// let subscription = progress.subscribe(on: .mainAsync) { fraction in
///     print("downloaded \(Int(fraction * 100))%")
///     shown.signal()
/// }
/// progress.send(0.5)
/// progress.send(completion: .finished)
/// try await shown.acquire()  // suspends, so the main queue runs the callback
/// // Prints "downloaded 50%"
/// ```
///
/// Guarantees:
/// - Calls to one subscriber never overlap and follow send order, whatever its route.
/// - With ``CallbackQueue/untouch`` and one sending thread, a value is delivered before ``send(_:)`` returns. A value
///   sent from inside a subscriber's own callback reaches that subscriber after the callback returns.
/// - After ``send(completion:)``, later sends are ignored, ``subscriberCount`` is 0, and a new subscriber receives
///   the completion at once (before ``subscribe(on:receiveValue:receiveCompletion:)-(CallbackQueue,_,_)`` returns, on `untouch`).
/// - Every subscriber receives the events in one order, also when a callback sends or completes: values sent before a
///   completion reach every subscriber before it.
/// - No subscriber is called while a lock of the subject or of any subscriber is held, and
///   ``CallbackSubscription/cancel()`` waits for no callback, so a callback may send, complete, subscribe, or cancel
///   any subscription: its own, or one whose callback runs on another thread at the same time.
/// - A sequence of ``values``, and its iterations, do not keep the subject alive: releasing the subject without a
///   completion ends them as finished. A subscriber of
///   ``subscribe(on:receiveValue:receiveCompletion:)-(CallbackQueue,_,_)`` is not called then.
public final class CallbackSubject<Output: Sendable, Failure: Error>: Sendable {
    @usableFromInline
    struct State: Sendable {
        @usableFromInline var subscribers: [SubjectSubscriber<Output, Failure>] = []
        @usableFromInline var completion: SubjectCompletion<Failure>?

        @usableFromInline
        init() {}
    }

    /// What one send does once it has released the lock.
    @usableFromInline
    enum SendAction {
        /// Nothing: no subscriber, or the drains that run already deliver the value.
        case none
        /// Deliver the value to the lane's subscriber: the send armed the lane, and holds its drain.
        case deliverInLane(SubjectSubscriber<Output, Failure>)
        /// Deliver what waits in the lane's mailbox, the value last: the send holds the lane's drain.
        case finishLaneDrain(SubjectSubscriber<Output, Failure>)
        /// Start the drains of the subscribers whose bit is set (the first 64), and of any others that wait.
        case startDrains([SubjectSubscriber<Output, Failure>], UInt64)
    }

    @usableFromInline
    let state = AtomicBox(State())
    /// The fast path to the only subscriber, when it is on `untouch`; see ``SubjectSoleLane``.
    @usableFromInline
    let lane = SubjectSoleLane<Output, Failure>()

    /// Creates a subject with no subscribers.
    public init() {}

    deinit {
        // Nothing else can reach the subject now: no send, subscribe or cancel runs on it any more, so the lane is idle
        // and its mailbox empty. A sequence of `values` holds only its subscription, so its loop would wait for ever;
        // it ends as finished, after the values already in its mailbox.
        self.lane.disarm()?.finish()
        let state = self.state.value
        guard state.completion == nil else { return }
        let finishing = state.subscribers.filter(\.finishesWithSubject)
        for subscriber in finishing { subscriber.enqueue(.completion(.finished)) }
        for subscriber in finishing { subscriber.startDrainIfScheduled() }
    }

    /// How many subscribers receive values now; 0 after a completion.
    public var subscriberCount: Int {
        self.state.value.subscribers.count
    }

    // Disfavoured so that `on: .mainAsync` and `on: .mainCurrentOrAsync` pick the main-actor overload: a closure's
    // isolation is checked only after the overload is chosen, and this one would win otherwise. No other route is a
    // `MainCallbackQueue`, so every other call has this overload alone.
    /// Adds a subscriber that receives values and the completion on `queue`.
    ///
    /// The callbacks are nonisolated, since `queue` may run them anywhere. Written as `.mainAsync` or
    /// `.mainCurrentOrAsync`, the route is a ``MainCallbackQueue`` and the other `subscribe`, whose callbacks are
    /// `@MainActor`, is the one called.
    ///
    /// - Parameters:
    ///   - queue: Where the callbacks run; inline on the sending thread (``CallbackQueue/untouch``) unless you say
    ///     otherwise.
    ///   - receiveValue: Called with each value sent after this subscription.
    ///   - receiveCompletion: Called once with the completion.
    /// - Returns: The subscription. Delivery stops when it is cancelled or released, so keep it.
    @_disfavoredOverload
    public func subscribe(
        on queue: CallbackQueue = .untouch,
        receiveValue: @escaping @Sendable (Output) -> Void,
        receiveCompletion: @escaping @Sendable (SubjectCompletion<Failure>) -> Void = { _ in }
    ) -> CallbackSubscription {
        self.subscribe(
            on: queue,
            finishingWithSubject: false,
            receiveValue: receiveValue,
            receiveCompletion: receiveCompletion
        )
    }

    /// Adds a subscriber whose callbacks run on the main actor, so they may touch main-actor state.
    ///
    /// ```swift
    /// import CallbackRouting
    ///
    /// @MainActor final class Downloads {
    ///     var fractions: [Double] = []
    ///     var subscription: CallbackSubscription?
    ///     let finished = CountingSemaphore()
    ///
    ///     func watch(_ progress: CallbackSubject<Double, Never>) {
    ///         subscription = progress.subscribe(on: .mainAsync) { self.fractions.append($0) }
    ///             receiveCompletion: { _ in
    ///                 print(self.fractions)
    ///                 self.finished.signal()
    ///             }
    ///     }
    /// }
    ///
    /// let downloads = Downloads()
    /// let progress = CallbackSubject<Double, Never>()
    /// downloads.watch(progress)
    /// progress.send(0.5)
    /// progress.send(completion: .finished)
    /// try await downloads.finished.acquire()  // suspends, so the main queue runs the callbacks
    /// // Prints "[0.5]"
    /// ```
    ///
    /// `on: .mainAsync` and `on: .mainCurrentOrAsync` call this overload from any code, and a `{ @MainActor in … }`
    /// closure is accepted as is. The routes that run callbacks elsewhere (`.untouch`, `.dispatch`, `.operationQueue`)
    /// are not ``MainCallbackQueue`` values, so a `@MainActor` closure given with them does not compile. The rule for
    /// every API of the package is in "Isolation" of the async guide (Docs/AsyncCode.md).
    ///
    /// - Parameters:
    ///   - queue: ``MainCallbackQueue/mainAsync`` or ``MainCallbackQueue/mainCurrentOrAsync``.
    ///   - receiveValue: Called on the main actor with each value sent after this subscription.
    ///   - receiveCompletion: Called once on the main actor with the completion.
    /// - Returns: The subscription. Delivery stops when it is cancelled or released, so keep it.
    public func subscribe(
        on queue: MainCallbackQueue,
        receiveValue: @escaping @MainActor @Sendable (Output) -> Void,
        receiveCompletion: @escaping @MainActor @Sendable (SubjectCompletion<Failure>) -> Void = { _ in }
    ) -> CallbackSubscription {
        self.subscribe(
            on: queue.callbackQueue,
            finishingWithSubject: false,
            receiveValue: MainCallbackQueue.onMainActor(receiveValue),
            receiveCompletion: MainCallbackQueue.onMainActor(receiveCompletion)
        )
    }

    /// Adds a subscriber, as ``subscribe(on:receiveValue:receiveCompletion:)-(CallbackQueue,_,_)`` does.
    ///
    /// - Parameters:
    ///   - queue: Where the callbacks run.
    ///   - finishingWithSubject: Whether the subscriber receives `.finished` when the subject is released without a
    ///     completion, as an iteration of ``values`` does.
    ///   - receiveValue: Called with each value sent after this subscription.
    ///   - receiveCompletion: Called once with the completion.
    /// - Returns: The subscription.
    func subscribe(
        on queue: CallbackQueue,
        finishingWithSubject: Bool,
        receiveValue: @escaping @Sendable (Output) -> Void,
        receiveCompletion: @escaping @Sendable (SubjectCompletion<Failure>) -> Void
    ) -> CallbackSubscription {
        let subscriber = SubjectSubscriber(
            route: queue,
            finishesWithSubject: finishingWithSubject,
            receiveValue: receiveValue,
            receiveCompletion: receiveCompletion
        )
        let (completion, vacated) = self.state.mutate { state -> (SubjectCompletion<Failure>?, Vacated?) in
            guard state.completion == nil else { return (state.completion, nil) }
            state.subscribers.append(subscriber)
            return (nil, self.lane.disarm())  // the only subscriber is no longer the only one
        }
        vacated?.finish()
        if let completion {
            subscriber.enqueue(.completion(completion))
            subscriber.startDrainIfScheduled()
        }
        return CallbackSubscription { [weak self] in
            subscriber.close()
            guard let self else { return }
            let vacated = self.state.mutate { state -> Vacated? in
                let count = state.subscribers.count
                state.subscribers.removeAll { $0 === subscriber }
                return state.subscribers.count == count ? nil : self.lane.disarm()
            }
            vacated?.finish()
        }
    }

    typealias Vacated = SubjectSoleLane<Output, Failure>.Vacated

    /// The values sent from now on, as an `AsyncSequence` that ends with the completion, or as finished when the
    /// subject is released.
    ///
    /// It subscribes before it returns, so a value sent after that reaches the loop, even one sent before the loop
    /// starts: values the loop has not taken yet are all kept. See ``CallbackSubjectValues``.
    public var values: CallbackSubjectValues<Output, Failure> {
        CallbackSubjectValues(subject: self, bufferingPolicy: .unbounded)
    }

    /// The values sent from now on, with values the loop has not taken yet kept as `bufferingPolicy` says.
    ///
    /// It subscribes before it returns, so a value sent after that reaches the loop, even one sent before the loop
    /// starts, unless the policy drops it.
    /// - Parameter bufferingPolicy: What happens to values sent faster than the loop takes them, and before it starts.
    /// - Returns: An `AsyncSequence` of the values that ends with the completion, or when the subject is released; see
    ///   ``CallbackSubjectValues``.
    /// - Precondition: A buffer limit is 0 or more.
    public func values(
        bufferingPolicy: CallbackSubjectValues<Output, Failure>.BufferingPolicy
    ) -> CallbackSubjectValues<Output, Failure> {
        CallbackSubjectValues(subject: self, bufferingPolicy: bufferingPolicy)
    }

    /// Sends `value` to every current subscriber; ignored after a completion.
    ///
    /// - Parameter value: The value; each subscriber receives it on its own queue.
    @inlinable
    public func send(_ value: Output) {
        // The fast path: the only subscriber, on `untouch`, claimed and let go with one compare-exchange each.
        if let subscriber = self.lane.claim() {
            if subscriber._withUnsafeGuaranteedRef({ $0.deliverInLane(value, lane: self.lane) }) { self.lane.vacate() }
            return
        }
        switch self.sendLocked(value) {
        case .none:
            return
        case .deliverInLane(let subscriber):
            if subscriber.deliverInLane(value, lane: self.lane) { self.lane.vacate() }
        case .finishLaneDrain(let subscriber):
            if subscriber.finishLaneDrain(lane: self.lane) { self.lane.vacate() }
        case .startDrains(let subscribers, let starts):
            for (index, subscriber) in subscribers.enumerated() {
                if index < UInt64.bitWidth {
                    if starts & (1 << index) != 0 { subscriber.startDrain(delivering: value) }
                } else {
                    subscriber.startDrainIfScheduled()
                }
            }
        }
    }

    /// The part of a send under the lock: puts `value` into every mailbox, or arms the lane.
    @inlinable
    func sendLocked(_ value: Output) -> SendAction {
        // Into every mailbox under the lock, so that every subscriber sees sends in one order; delivered outside it.
        // The first 64 subscribers' drains this send must start are noted in a bit mask, which saves each of them a
        // second lock; any others are started as a completion's are.
        self.state.mutate { state -> SendAction in
            if state.subscribers.count == 1 {
                let subscriber = state.subscribers[0]
                // The lane's holder is busy: the value waits in the mailbox for it, or for this send, if it let go.
                if self.lane.isArmed {
                    return subscriber.enqueueInLane(value, lane: self.lane) ? .finishLaneDrain(subscriber) : .none
                }
                // Only one subscriber, on `untouch`, and idle: its drain, claimed here, goes to the lane.
                if subscriber.route.isUntouch, self.lane.isVacant {
                    guard subscriber.enqueueClaimingDrain(value) else { return .none }
                    self.lane.arm(subscriber)
                    return .deliverInLane(subscriber)
                }
            }
            var starts: UInt64 = 0
            for (index, subscriber) in state.subscribers.enumerated() {
                if index < UInt64.bitWidth {
                    if subscriber.enqueueClaimingDrain(value) { starts |= 1 << index }
                } else {
                    subscriber.enqueue(.value(value))
                }
            }
            return .startDrains(state.subscribers, starts)
        }
    }

    /// Ends the subject: every subscriber receives `completion`, and later sends are ignored.
    ///
    /// - Parameter completion: `.finished`, or `.failure(error)`. A second completion is ignored.
    public func send(completion: SubjectCompletion<Failure>) {
        let (subscribers, vacated) = self.state.mutate { state -> ([SubjectSubscriber<Output, Failure>], Vacated?) in
            guard state.completion == nil else { return ([], nil) }
            state.completion = completion
            // Disarmed first: the lane's busy holder, if any, delivers the completion as the mailbox's ordinary drain.
            let vacated = self.lane.disarm()
            for subscriber in state.subscribers { subscriber.enqueue(.completion(completion)) }
            defer { state.subscribers = [] }
            return (state.subscribers, vacated)
        }
        vacated?.finish()
        for subscriber in subscribers { subscriber.startDrainIfScheduled() }
    }
}
