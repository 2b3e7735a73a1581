import CallbackRouting
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

/// The fast path of a send to a subject's only `untouch` subscriber, against the contract.
///
/// The lane claims and lets go of the subscriber with one compare-exchange each; these tests put many threads at its
/// worst moments: senders, subscribers joining and leaving, cancels and a completion racing the sends. Run them under
/// schedule chaos (`CONCURRENCYKIT_CHAOS`) too.
@Suite("CallbackSubject: the only untouch subscriber's fast path", .timeLimit(.minutes(3)))
struct CallbackSubjectLaneTests {
    /// What one subscriber received, in unsynchronized storage: the subject must order the calls.
    final class Received: @unchecked Sendable {
        // Safety: deliberately unsynchronized; calls to one subscriber must not overlap (the detector checks), and the
        // test reads it only once every call has returned.
        var values: [Int] = []
        var completions = 0
        var valuesAtCompletion = -1
        let detector = OverlapDetector()

        func receive(_ value: Int) { self.detector.section { self.values.append(value) } }

        func complete() {
            self.detector.section {
                self.completions += 1
                self.valuesAtCompletion = self.values.count
            }
        }
    }

    static let perSender = 300

    /// A clock of stamps, shared by the threads of a run.
    final class Stamps: Sendable {
        let clock = Atomic<Int>(0)

        /// The next stamp: larger than every stamp taken before it returned.
        func next() -> Int { self.clock.add(1, ordering: .sequentiallyConsistent).newValue }
    }

    /// A value naming its sender and its number in that sender's sends.
    static func value(sender: Int, number: Int) -> Int { sender * 1_000_000 + number }

    /// The first rule `values` break: each sender's values in its send order, none twice; with `complete`, none lost.
    static func orderViolation(_ values: [Int], senders: Int, complete: Bool) -> String? {
        var last = [Int](repeating: -1, count: senders)
        for value in values {
            let (sender, number) = value.quotientAndRemainder(dividingBy: 1_000_000)
            guard number > last[sender] else {
                return "sender \(sender)'s value \(number) came after its value \(last[sender]) (send order, or twice)"
            }
            guard number == last[sender] + 1 else { return "sender \(sender)'s value \(last[sender] + 1) was lost" }
            last[sender] = number
        }
        if complete, let sender = last.firstIndex(where: { $0 != Self.perSender - 1 }) {
            return "sender \(sender)'s values after its \(last[sender]) were lost"
        }
        return nil
    }

    @Test(
        "senders on many threads, one untouch subscriber: every value once, each sender's in order, one call at a time",
        arguments: [8, 16]
    )
    func concurrentSenders(threads: Int) async throws {
        try await offPoolTest { checks in
            for round in 0..<PropertyRun.rounds(4) {
                let subject = CallbackSubject<Int, Never>()
                let box = Received()
                let subscription = subject.subscribe { box.receive($0) }
                let finished = runOnThreads(threads) { sender in
                    for number in 0..<Self.perSender { subject.send(Self.value(sender: sender, number: number)) }
                }
                // Every drain runs inside a send on `untouch`: once all sends returned, every value was delivered.
                guard checks.expect(finished, "round \(round): the senders did not finish") else { return }
                checks.expect(box.detector.overlaps == 0, "round \(round): calls overlapped \(box.detector.overlaps)x")
                let rule = Self.orderViolation(box.values, senders: threads, complete: true)
                checks.expect(rule == nil, "\(PropertyRun.failure(rule ?? "", round: round))")
                subscription.cancel()
            }
        }
    }

    /// A subscriber that joins mid-stream, and maybe leaves.
    struct Joiner: Sendable {
        let box: Received
        let subscription: CallbackSubscription
        let cancelled: Bool
    }

    @Test(
        "subscribers joining and leaving while many threads send: each sees an unbroken stretch of one order of sends",
        arguments: [8, 16]
    )
    func oneOrderForAll(threads: Int) async throws {
        try await offPoolTest { checks in
            let random = PropertyRun.random(2_601)
            for round in 0..<PropertyRun.rounds(4) {
                let subject = CallbackSubject<Int, Never>()
                // The reference: there all along, alone at times (then sends take the fast path), never cancelled.
                let reference = Received()
                let subscription = subject.subscribe { reference.receive($0) }
                let senders = threads - 2
                let joiners = AtomicBox<[Joiner]>([])
                let serial = DispatchQueue(label: "test.lane.joiner.\(round)")
                let seeds = (0..<threads).map { random.derived(round * 100 + $0) }
                let finished = runOnThreads(threads) { index in
                    var random = seeds[index]
                    guard index >= senders else {
                        for number in 0..<Self.perSender {
                            subject.send(Self.value(sender: index, number: number))
                            if random.chance(3) { Thread.sleep(forTimeInterval: 0.000_05) }
                        }
                        return
                    }
                    // Two threads add subscribers, on `untouch` or a serial queue, and cancel most of them again.
                    for _ in 0..<12 {
                        for _ in 0..<Int.random(in: 0..<3_000, using: &random) { SpinFlag().pause() }
                        let box = Received()
                        let route: CallbackQueue = random.chance(50) ? .untouch : .dispatch(serial)
                        let joined = subject.subscribe(on: route) { box.receive($0) }
                        for _ in 0..<Int.random(in: 0..<3_000, using: &random) { SpinFlag().pause() }
                        let cancels = random.chance(75)
                        if cancels { joined.cancel() }
                        joiners.mutate { $0.append(Joiner(box: box, subscription: joined, cancelled: cancels)) }
                    }
                }
                guard checks.expect(finished, "round \(round): the threads did not finish") else { return }
                serial.sync {}  // what the serial route had queued has run, or was dropped
                let order = reference.values
                let rule = Self.orderViolation(order, senders: senders, complete: true)
                guard checks.expect(rule == nil, "\(PropertyRun.failure(rule ?? "", round: round)) (reference)") else {
                    return
                }
                let position = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
                for (number, joiner) in joiners.value.enumerated() {
                    let seen = joiner.box.values
                    checks.expect(
                        joiner.box.detector.overlaps == 0,
                        "round \(round): joiner \(number)'s calls overlapped"
                    )
                    guard let first = seen.first else { continue }
                    let start = position[first] ?? order.count
                    let stretch = Array(order[start..<min(order.count, start + seen.count)])
                    // The same order as the reference's, nothing skipped; and all of it from the join on if kept.
                    var broken = seen != stretch
                    if !joiner.cancelled && start + seen.count != order.count { broken = true }
                    checks.expect(
                        !broken,
                        """
                        \(PropertyRun.failure("every subscriber sees one order of sends, from its join on", round: round)) \
                        — joiner \(number) (cancelled: \(joiner.cancelled)) saw \(seen.count) values from position \
                        \(start) of \(order.count), not that stretch of the reference's
                        """
                    )
                }
                withExtendedLifetime((subscription, joiners)) {}
            }
        }
    }

    @Test(
        "cancel() of the only untouch subscriber while many threads send: no call for a value sent after it returned",
        arguments: [8, 16]
    )
    func cancelRacingSends(threads: Int) async throws {
        try await offPoolTest { checks in
            var random = PropertyRun.random(2_602)
            for round in 0..<PropertyRun.rounds(6) {
                let subject = CallbackSubject<Int, Never>()
                let probe = LifetimeProbe()
                let box = Received()
                // A value is its stamp times 100 plus its sender: one sent after the cancel returned has a larger stamp.
                let stamps = Stamps()
                let cancelReturned = AtomicBox(Int.max)
                let subscription = AtomicBox<CallbackSubscription?>(nil)
                subscription.mutate {
                    $0 = subject.subscribe { [tracked = probe.make()] stamp in
                        withExtendedLifetime(tracked) { box.receive(stamp) }
                    }
                }
                let pause = Int.random(in: 0..<20_000, using: &random)
                let finished = runOnThreads(threads) { index in
                    guard index > 0 else {
                        for _ in 0..<pause { SpinFlag().pause() }
                        subscription.value?.cancel()
                        cancelReturned.mutate { $0 = stamps.next() }
                        return
                    }
                    for _ in 0..<Self.perSender { subject.send(stamps.next() * 100 + index) }
                }
                guard checks.expect(finished, "round \(round): the threads did not finish") else { return }
                checks.expect(box.detector.overlaps == 0, "round \(round): calls overlapped")
                let late = box.values.filter { $0 / 100 > cancelReturned.value }
                checks.expect(
                    late.isEmpty,
                    """
                    \(PropertyRun.failure("no call starts after cancel() returned", round: round)): \(late.count) \
                    values sent after it were delivered
                    """
                )
                // Each sender's values in its send order (its stamps grow); sends of different threads have none.
                let bySender = Dictionary(grouping: box.values) { $0 % 100 }
                checks.expect(
                    bySender.values.allSatisfy { $0 == $0.sorted() },
                    "\(PropertyRun.failure("each sender's values in its send order", round: round))"
                )
                subscription.mutate { $0 = nil }
                // The subscription ended: the subject lets go of the callbacks, and of what they capture.
                checks.expect(probe.allReleased(), "round \(round): the cancelled subscriber's callbacks were kept")
                withExtendedLifetime(subject) {}
            }
        }
    }

    @Test(
        "a completion racing sends on many threads: the only untouch subscriber gets it once, after every value before it",
        arguments: [8, 16]
    )
    func completionRacingSends(threads: Int) async throws {
        try await offPoolTest { checks in
            var random = PropertyRun.random(2_603)
            for round in 0..<PropertyRun.rounds(6) {
                let subject = CallbackSubject<Int, Never>()
                let probe = LifetimeProbe()
                let box = Received()
                let subscription = subject.subscribe(
                    receiveValue: { [tracked = probe.make()] value in
                        withExtendedLifetime(tracked) { box.receive(value) }
                    },
                    receiveCompletion: { _ in box.complete() }
                )
                let pause = Int.random(in: 0..<20_000, using: &random)
                let senders = threads - 1
                let finished = runOnThreads(threads) { index in
                    guard index < senders else {
                        for _ in 0..<pause { SpinFlag().pause() }
                        subject.send(completion: .finished)
                        return
                    }
                    for number in 0..<Self.perSender { subject.send(Self.value(sender: index, number: number)) }
                }
                guard checks.expect(finished, "round \(round): the threads did not finish") else { return }
                checks.expect(box.detector.overlaps == 0, "round \(round): calls overlapped")
                checks.expect(box.completions, equals: 1, "round \(round): completions")
                checks.expect(
                    box.valuesAtCompletion == box.values.count,
                    "\(PropertyRun.failure("no value after the completion", round: round))"
                )
                // Each sender's values before the completion: an unbroken start of its sends.
                let rule = Self.orderViolation(box.values, senders: senders, complete: false)
                checks.expect(rule == nil, "\(PropertyRun.failure(rule ?? "", round: round))")
                checks.expect(probe.allReleased(), "round \(round): the completed subscriber's callbacks were kept")
                withExtendedLifetime(subscription) {}
            }
        }
    }

    /// How the test changes the subject while the lane's holder is inside the callback.
    enum Meanwhile: String, CaseIterable, CustomTestStringConvertible {
        case cancel, subscribe, complete

        var testDescription: String { rawValue }
    }

    @Test(
        "while the lane's holder is in a callback: a cancel drops what waits, a joiner gets what follows, a completion comes last",
        arguments: Meanwhile.allCases
    )
    func changesWhileTheHolderCalls(_ meanwhile: Meanwhile) async throws {
        try await offPoolTest { checks in
            let subject = CallbackSubject<Int, Never>()
            let probe = LifetimeProbe()
            let first = Received()
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let subscription = subject.subscribe(
                receiveValue: { [tracked = probe.make()] value in
                    withExtendedLifetime(tracked) { first.receive(value) }
                    if value == 1 {
                        entered.signal()
                        hold(until: release)
                    }
                },
                receiveCompletion: { _ in first.complete() }
            )
            subject.send(0)  // arms the lane: the only subscriber, on `untouch`
            let holderReturned = DispatchSemaphore(value: 0)
            onNewThread {
                subject.send(1)  // through the lane; the callback holds
                holderReturned.signal()
            }
            try checks.require(entered.wait(timeout: deadline()) == .success, "the callback was not called")
            subject.send(2)  // waits in the mailbox for the holder; this send returns at once
            let joiner = Received()
            var joined: CallbackSubscription?
            switch meanwhile {
            case .cancel:
                subscription.cancel()
            case .subscribe:
                joined = subject.subscribe { joiner.receive($0) }
                subject.send(3)  // to both: the first subscriber's waits behind 2 for the holder
            case .complete:
                subject.send(completion: .finished)
                subject.send(3)  // ignored
            }
            release.signal()
            checks.expect(holderReturned.wait(timeout: deadline()) == .success, "the holder's send did not return")
            checks.expect(first.detector.overlaps == 0, "calls overlapped")
            switch meanwhile {
            case .cancel:
                checks.expect(first.values, equals: [0, 1], "a value waiting when cancel() returned was delivered")
                checks.expect(probe.allReleased(), "the cancelled subscriber's callbacks were kept")
            case .subscribe:
                checks.expect(first.values, equals: [0, 1, 2, 3])
                checks.expect(joiner.values, equals: [3], "the joiner sees the sends from its join on")
                subject.send(4)  // two subscribers now: the slow way, to both
                checks.expect(first.values.last, equals: 4)
                checks.expect(joiner.values, equals: [3, 4])
                joined?.cancel()
                subject.send(5)  // the only subscriber again: the lane is armed anew
                subject.send(6)
                checks.expect(first.values, equals: [0, 1, 2, 3, 4, 5, 6])
            case .complete:
                checks.expect(first.values, equals: [0, 1, 2])
                checks.expect(first.completions, equals: 1, "completions")
                checks.expect(first.valuesAtCompletion, equals: 3, "values before the completion")
                checks.expect(probe.allReleased(), "the completed subscriber's callbacks were kept")
            }
            withExtendedLifetime((subscription, joined)) {}
        }
    }
}
