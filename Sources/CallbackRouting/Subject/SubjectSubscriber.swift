/// One subscriber of a ``CallbackSubject``: a mailbox of events delivered one at a time, in order, on its route.
///
/// Sends append to the mailbox; whoever finds it idle schedules one drain on the subscriber's ``CallbackQueue``, and
/// the drain delivers events until the mailbox is empty. So calls to one subscriber never overlap and follow send
/// order whatever the route, a value sent from inside the subscriber's own callback is delivered after that callback
/// returns, and no callback runs under a lock.
final class SubjectSubscriber<Output: Sendable, Failure: Error>: Sendable {
    enum Event {
        case value(Output)
        case completion(SubjectCompletion<Failure>)
    }

    struct Mailbox {
        /// Events not yet delivered start at `head`; delivered ones are dropped when the mailbox empties, so the
        /// storage is reused and a steady stream of sends allocates nothing.
        var events: [Event] = []
        var head = 0
        /// A drain is scheduled or running.
        var isDraining = false
        /// Cancelled, or the completion was delivered: nothing more is accepted or delivered.
        var isClosed = false

        mutating func reset() {
            self.events.removeAll(keepingCapacity: true)
            self.head = 0
        }
    }

    private let route: CallbackQueue
    private let receiveValue: @Sendable (Output) -> Void
    private let receiveCompletion: @Sendable (SubjectCompletion<Failure>) -> Void
    private let mailbox = AtomicBox(Mailbox())

    init(
        route: CallbackQueue,
        receiveValue: @escaping @Sendable (Output) -> Void,
        receiveCompletion: @escaping @Sendable (SubjectCompletion<Failure>) -> Void
    ) {
        self.route = route
        self.receiveValue = receiveValue
        self.receiveCompletion = receiveCompletion
    }

    /// Queues `event` and starts a drain on the route unless one is already scheduled or running.
    func receive(_ event: Event) {
        let startsDrain = self.mailbox.mutate { mailbox -> Bool in
            guard !mailbox.isClosed else { return false }
            mailbox.events.append(event)
            guard !mailbox.isDraining else { return false }
            mailbox.isDraining = true
            return true
        }
        guard startsDrain else { return }
        if case .untouch = self.route {
            self.drain()  // The same as going through `execute`, without allocating a closure per send.
        } else {
            self.route.execute { self.drain() }
        }
    }

    /// Stops delivery and drops what is queued.
    func close() {
        self.mailbox.mutate { mailbox in
            mailbox.isClosed = true
            mailbox.reset()
        }
    }

    private func drain() {
        while let event = self.nextEvent() {
            switch event {
            case .value(let value):
                self.receiveValue(value)
            case .completion(let completion):
                self.receiveCompletion(completion)
            }
        }
    }

    /// The next event to deliver, or `nil` after marking the drain finished.
    private func nextEvent() -> Event? {
        self.mailbox.mutate { mailbox -> Event? in
            guard !mailbox.isClosed, mailbox.head < mailbox.events.count else {
                mailbox.isDraining = false
                mailbox.reset()
                return nil
            }
            let event = mailbox.events[mailbox.head]
            mailbox.head += 1
            if case .completion = event {
                mailbox.isClosed = true
            }
            return event
        }
    }
}
