import CallbackRouting
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

/// CallbackSubject: "calls to one subscriber never overlap and follow send order, whatever its route", every value
/// comes before the completion, and "no receiveValue/receiveCompletion call starts after cancel() returns"
/// (`cancel()` does not wait for a call already running on another thread).
@Suite("Contract properties: subjects", .serialized, .timeLimit(propertyTimeLimit))
struct SubjectPropertyTests {
    /// What one subscriber received, kept in unsynchronized storage: the subject must order the calls.
    final class Received: @unchecked Sendable {
        // Safety: deliberately unsynchronized; the subject must not overlap calls to one subscriber (that is checked).
        var values: [Int] = []
        var completions = 0
        var valuesAtCompletion = -1
        let detector = OverlapDetector()
        let completed = DispatchSemaphore(value: 0)
        let full: Bool

        init(full: Bool) { self.full = full }

        func receive(_ value: Int) { self.detector.section { self.values.append(value) } }

        func complete() {
            self.detector.section {
                self.completions += 1
                self.valuesAtCompletion = self.values.count
            }
            self.completed.signal()
        }
    }

    /// The routes under test, each with queues of its own.
    static func routes(_ round: Int) -> [(String, CallbackQueue)] {
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 4
        return [
            ("untouch", .untouch),
            ("dispatch(serial)", .dispatch(DispatchQueue(label: "props.subject.serial.\(round)"))),
            (
                "dispatch(concurrent)",
                .dispatch(DispatchQueue(label: "props.subject.concurrent.\(round)", attributes: .concurrent))
            ),
            ("operationQueue", .operationQueue(operations)),
        ]
    }

    static let senders = 3
    static let perSender = 150

    @Test("each subscriber gets every sender's values in send order, one call at a time, and then the completion")
    func sendOrderAndCompletion() async {
        let failures = PropertyFailures()
        await offPool {
            let random = PropertyRun.random(20)
            let rounds = PropertyRun.rounds(12)
            for round in 0..<rounds {
                let subject = CallbackSubject<Int, Never>()
                var subscriptions: [CallbackSubscription] = []
                var received: [(String, Received)] = []
                let lateSubscribers = AtomicBox<[(String, Received, CallbackSubscription)]>([])
                for (name, route) in Self.routes(round) {
                    let box = Received(full: true)
                    subscriptions.append(
                        subject.subscribe(
                            on: route,
                            receiveValue: { box.receive($0) },
                            receiveCompletion: { _ in box.complete() }
                        )
                    )
                    received.append((name, box))
                }
                let seeds = (0...Self.senders).map { random.derived($0) }
                let routes = Self.routes(round + 1_000)
                let finished = runOnThreads(Self.senders + 1) { index in
                    var random = seeds[index]
                    if index == Self.senders {
                        // Subscribers that join mid-stream: in order from where they joined, and the completion last.
                        for (name, route) in routes {
                            for _ in 0..<Int.random(in: 0..<2_000, using: &random) { SpinFlag().pause() }
                            let box = Received(full: false)
                            let subscription = subject.subscribe(
                                on: route,
                                receiveValue: { box.receive($0) },
                                receiveCompletion: { _ in box.complete() }
                            )
                            lateSubscribers.mutate { $0.append(("late " + name, box, subscription)) }
                        }
                        return
                    }
                    for number in 0..<Self.perSender {
                        subject.send(index * 1_000_000 + number)
                        if random.chance(5) { Thread.sleep(forTimeInterval: 0.000_05) }
                    }
                }
                failures.expect(finished)
                subject.send(completion: .finished)
                let all = received + lateSubscribers.value.map { ($0.0, $0.1) }
                for (name, box) in all {
                    let completed = box.completed.wait(timeout: deadline()) == .success
                    let rule = Self.violation(box, completed: completed)
                    failures.expect(
                        rule == nil,
                        "\(PropertyRun.failure(rule ?? "", round: round)) — subscriber \(name)"
                    )
                    if rule != nil { return }
                }
                withExtendedLifetime((subscriptions, lateSubscribers)) {}
            }
        }
        report(failures)
    }

    /// Waits until the blocks already sent to `routes` have run, so that queued deliveries have run or been dropped.
    static func runDry(_ routes: [(String, CallbackQueue)]) {
        for (_, route) in routes {
            switch route {
            case .dispatch(let queue): queue.sync(flags: .barrier) {}
            case .operationQueue(let queue): (queue as? OperationQueue)?.waitUntilAllOperationsAreFinished()
            default: break
            }
        }
    }

    /// The first rule one subscriber's record breaks, or `nil`.
    static func violation(_ box: Received, completed: Bool) -> String? {
        guard completed else { return "the completion reaches every subscriber (timed out)" }
        if box.detector.overlaps > 0 { return "calls to one subscriber never overlap (\(box.detector.overlaps))" }
        if box.completions != 1 { return "one completion per subscriber (got \(box.completions))" }
        if box.valuesAtCompletion != box.values.count { return "every value comes before the completion" }
        var last = [Int](repeating: -1, count: senders)
        for value in box.values {
            let sender = value / 1_000_000
            let number = value % 1_000_000
            if number <= last[sender] {
                return "sender \(sender)'s value \(number) came after its value \(last[sender]) (send order)"
            }
            if box.full && number != last[sender] + 1 {
                return "sender \(sender)'s value \(last[sender] + 1) was lost"
            }
            last[sender] = number
        }
        if box.full && box.values.count != senders * perSender {
            return "every value reaches a subscriber that was there before it was sent (\(box.values.count))"
        }
        return nil
    }

    /// Checks the rule against a history of sends, cancel returns and callback starts.
    ///
    /// The history orders `send` (recorded before the call), `cancelReturned` and `callback` (the callback's first
    /// statement) events. A callback whose value was sent after its subscriber's `cancel()` returned certainly
    /// started after that return, so it breaks the rule. A callback for an earlier value that records itself after
    /// the return is not flagged: it may have started before the return and lost its CPU before its first statement
    /// (`cancel()` does not wait for a running call), and no recording can tell the two apart.
    @Test("no callback starts for a value sent after cancel() returned, on any route, with senders racing the cancel")
    func noCallbackAfterCancel() async {
        let failures = PropertyFailures()
        await offPool {
            var random = PropertyRun.random(21)
            let rounds = PropertyRun.rounds(20)
            for round in 0..<rounds {
                let subject = CallbackSubject<Int, Never>()
                let history = PropertyHistory()
                let routes = Self.routes(round)
                let subscriptions = routes.enumerated().map { index, route in
                    subject.subscribe(on: route.1) { value in history.record("callback", index, value) }
                }
                let sendCounter = Atomic<Int>(0)
                let cancelOrder = routes.indices.shuffled(using: &random)
                let pauses = cancelOrder.map { _ in Int.random(in: 0..<3_000, using: &random) }
                let stop = Atomic<Bool>(false)
                let finished = runOnThreads(3) { index in
                    if index == 2 {
                        for (position, subscriber) in cancelOrder.enumerated() {
                            for _ in 0..<pauses[position] { SpinFlag().pause() }
                            subscriptions[subscriber].cancel()
                            history.record("cancelReturned", subscriber)
                        }
                        stop.store(true, ordering: .releasing)
                        return
                    }
                    while !stop.load(ordering: .acquiring) {
                        let value = sendCounter.add(1, ordering: .relaxed).newValue
                        history.record("send", -1, value)
                        subject.send(value)
                    }
                    // A few more after every cancel returned.
                    for _ in 0..<20 {
                        let value = sendCounter.add(1, ordering: .relaxed).newValue
                        history.record("send", -1, value)
                        subject.send(value)
                    }
                }
                failures.expect(finished)
                Self.runDry(routes)
                let events = history.events
                var sendAt: [Int: Int] = [:]
                var cancelAt: [Int: Int] = [:]
                for event in events {
                    if event.kind == "send" { sendAt[event.detail] = event.sequence }
                    if event.kind == "cancelReturned" { cancelAt[event.payload] = event.sequence }
                }
                for event in events where event.kind == "callback" {
                    guard let cancelled = cancelAt[event.payload], let sent = sendAt[event.detail], sent > cancelled
                    else { continue }
                    failures.record(
                        (PropertyRun.failure(
                            "no call starts after cancel() returns: subscriber \(event.payload) (\(routes[event.payload].0)) "
                                + "got value \(event.detail), sent after its cancel() returned",
                            round: round
                        ) + "\n" + PropertyHistory.excerpt(of: events, around: [cancelled, sent, event.sequence]))
                    )
                    return
                }
            }
        }
        report(failures)
    }

    /// How a subject's stream ends in ``subscribeAgainstTheEnd(_:)``.
    enum Ending: String, Sendable, CaseIterable, CustomTestStringConvertible {
        /// `send(completion: .finished)`.
        case completion
        /// The last reference to the subject goes: its `values` sequences finish, its plain subscribers get nothing.
        case release

        var testDescription: String { rawValue }
    }

    /// A subscriber that arrives as the subject completes or is released gets its ending exactly once.
    ///
    /// "After a completion, ... a new subscriber gets the completion before `subscribe` returns (on `untouch`)"; and
    /// whoever arrives at the moment the subject ends gets its ending once, after its values. Subscribers join on
    /// every route, and `values` sequences start, from several threads while a sender sends and another thread ends
    /// the subject.
    @Test(
        "a subscriber that arrives as the subject completes or is released gets its ending exactly once",
        arguments: Ending.allCases
    )
    func subscribeAgainstTheEnd(_ ending: Ending) async {
        let failures = PropertyFailures()
        await offPool {
            let random = PropertyRun.random(ending == .completion ? 22 : 23)
            let rounds = PropertyRun.rounds(40)
            let joiners = 3
            for round in 0..<rounds {
                // The box holds the only lasting reference; each thread holds one only while it calls the subject.
                let holder = AtomicBox<CallbackSubject<Int, Never>?>(CallbackSubject())
                let history = PropertyHistory()
                let plain = AtomicBox<[(String, Received, CallbackSubscription)]>([])
                let sequences = AtomicBox<[Received]>([])
                let sequencesEnded = DispatchGroup()
                let routes = (0..<joiners).map { Self.routes(round * joiners + $0) }
                let seeds = (0...joiners + 1).map { random.derived(round * (joiners + 2) + $0) }
                let ended = Atomic<Bool>(false)
                let finished = runOnThreads(joiners + 2, seconds: 10) { index in
                    var random = seeds[index]
                    switch index {
                    case joiners:  // the sender
                        for value in 0..<200 {
                            guard let subject = holder.value else { return }
                            subject.send(value)
                            if random.chance(10) { SpinFlag().pause() }
                        }
                    case joiners + 1:  // the end, while the joiners subscribe as fast as they can
                        for _ in 0..<Int.random(in: 0..<5_000, using: &random) { SpinFlag().pause() }
                        switch ending {
                        case .completion:
                            holder.value?.send(completion: .finished)
                            history.record("completed", -1)
                        case .release:
                            holder.mutate { $0 = nil }
                        }
                        ended.store(true, ordering: .releasing)
                    default:  // a joiner: subscribers on every route in turn, and now and then a `values` sequence
                        var extra = 0
                        for made in 0..<2_000 where extra < 8 {
                            if ended.load(ordering: .acquiring) { extra += 1 }
                            guard let subject = holder.value else { return }
                            if made % 8 == 7 {
                                let box = Received(full: false)
                                sequences.mutate { $0.append(box) }
                                sequencesEnded.enter()
                                let values = subject.values
                                Task.detached {
                                    for await value in values { box.receive(value) }
                                    box.complete()
                                    sequencesEnded.leave()
                                }
                                continue
                            }
                            let (name, route) = routes[index][made % routes[index].count]
                            let box = Received(full: false)
                            let subscribing = history.record("subscribing", index)
                            let subscription = subject.subscribe(
                                on: route,
                                receiveValue: { box.receive($0) },
                                receiveCompletion: { _ in box.complete() }
                            )
                            let completedBefore = history.events.contains {
                                $0.kind == "completed" && $0.sequence < subscribing
                            }
                            if case .untouch = route, completedBefore, box.completions != 1 {
                                failures.record(
                                    PropertyRun.failure(
                                        "a subscriber on untouch that subscribes after the completion gets it before "
                                            + "subscribe returns",
                                        round: round
                                    )
                                )
                            }
                            plain.mutate { $0.append((name, box, subscription)) }
                        }
                    }
                }
                failures.expect(
                    finished,
                    PropertyRun.failure("every joiner and sender returns (timed out)", round: round)
                )
                holder.mutate { $0 = nil }  // a completed subject goes too: nothing more may reach anyone
                // Released without a completion, a plain subscriber gets none: its route runs dry before the look.
                if ending == .release { routes.forEach(Self.runDry) }
                for (name, box, _) in plain.value {
                    let completed =
                        box.completed.wait(timeout: ending == .completion ? deadline(5) : .now()) == .success
                    let rule =
                        ending == .completion
                        ? Self.violation(box, completed: completed)
                        : (box.completions == 0
                            ? nil : "a released subject completes no plain subscriber (got \(box.completions))")
                    if let rule {
                        failures.record("\(PropertyRun.failure(rule, round: round)) — subscriber on \(name)")
                        return
                    }
                }
                let sequencesDone = sequencesEnded.wait(timeout: deadline(5)) == .success
                for box in sequences.value {
                    if let rule = Self.violation(box, completed: sequencesDone) {
                        failures.record("\(PropertyRun.failure(rule, round: round)) — a values sequence")
                        return
                    }
                }
                withExtendedLifetime(plain) {}
            }
        }
        report(failures)
    }

    @Test("two subscribers that cancel each other from their callbacks never deadlock, on any pair of queues")
    func mutualCancelDoesNotDeadlock() async {
        let failures = PropertyFailures()
        await offPool {
            let rounds = PropertyRun.rounds(30)
            for round in 0..<rounds {
                let subject = CallbackSubject<Int, Never>()
                let queues = [
                    DispatchQueue(label: "props.mutual.a.\(round)"),
                    DispatchQueue(
                        label: "props.mutual.b.\(round)",
                        attributes: round.isMultiple(of: 2) ? [] : .concurrent
                    ),
                ]
                let subscriptions = AtomicBox<[CallbackSubscription]>([])
                let arrived = AtomicBox([false, false])
                let returned = Atomic<Int>(0)
                let arrivals = Atomic<Int>(0)
                let made = (0..<2).map { index in
                    subject.subscribe(on: .dispatch(queues[index])) { _ in
                        let first = arrived.mutate { flags -> Bool in
                            defer { flags[index] = true }
                            return !flags[index]
                        }
                        guard first else { return }
                        arrivals.add(1, ordering: .relaxed)
                        // Rendezvous: meet the other callback for a moment, so that the two cancels really cross.
                        let limit = DispatchTime.now() + .milliseconds(2)
                        while !arrived.value[1 - index] && DispatchTime.now() < limit {}
                        // The round may be over already: a call begun just before the other's cancel still runs.
                        let both = subscriptions.value
                        if both.count == 2 { both[1 - index].cancel() }
                        returned.add(1, ordering: .relaxed)
                    }
                }
                subscriptions.mutate { $0 = made }
                subject.send(1)
                subject.send(2)
                _ = waitForProgress(progress: { returned.load(ordering: .relaxed) }) {
                    arrivals.load(ordering: .relaxed) > 0
                        && returned.load(ordering: .relaxed) >= arrivals.load(ordering: .relaxed)
                }
                let stuck = arrivals.load(ordering: .relaxed) - returned.load(ordering: .relaxed)
                failures.expect(
                    arrivals.load(ordering: .relaxed) > 0 && stuck == 0,
                    "\(PropertyRun.failure("cancel() never waits for a running callback (deadlock)", round: round)): \(stuck) of \(arrivals.load(ordering: .relaxed)) callbacks stuck in cancel(), none returning for \(stallSeconds) s"
                )
                // The callbacks hold the box that holds their subscriptions: break that cycle (LeakSanitizer saw it).
                subscriptions.mutate { $0 = [] }
                if stuck > 0 { return }
            }
        }
        report(failures)
    }
}
