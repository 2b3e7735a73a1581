import Testing

@testable import SafeValueCore

/// ``TurnStateMachine`` on its own, without threads: every event in every state, and the contract's rules for who gets
/// the turn next.
@Suite("TurnStateMachine: every event in every state")
struct TurnStateMachineTests {
    /// A waiter that says only who it is and whether a releaser may apply it.
    struct Waiter: TurnWaiter, Equatable {
        let name: String
        var isCombinable = false
    }

    typealias Machine = TurnStateMachine<Waiter>

    static let words = [TurnEngine.free, TurnEngine.held, TurnEngine.contended, TurnEngine.retired]

    /// Queues `waiter` as the engine does once the turn is contended.
    static func queue(_ machine: inout Machine, _ name: String, _ priority: CommandPriority, combinable: Bool = false) {
        machine.enqueue(Waiter(name: name, isCombinable: combinable), id: machine.nextID(), priority: priority)
    }

    /// Releases until nobody waits; returns who got the turn, in order, and how.
    static func drain(_ machine: inout Machine, combinedSoFar: Int = 0) -> [String] {
        var order: [String] = []
        while true {
            switch machine.released(combinedSoFar: combinedSoFar) {
            case .handOver(let waiter, _): order.append("grant " + waiter.name)
            case .apply(let waiter, _): order.append("apply " + waiter.name)
            case .free: return order
            case .retire: return order + ["retire"]
            }
        }
    }

    @Test(
        "a command arriving at the lock takes a free turn, marks a held one, queues behind a contended one, fails on a retired one"
    )
    func arrival() {
        let machine = Machine()
        #expect(machine.commandArrived(turn: TurnEngine.free) == .take)
        #expect(machine.commandArrived(turn: TurnEngine.held) == .markContendedAndQueue)
        #expect(machine.commandArrived(turn: TurnEngine.contended) == .queue)
        #expect(machine.commandArrived(turn: TurnEngine.retired) == .refuse)
    }

    @Test("identifiers of waiting commands are never reused")
    func identifiers() {
        var machine = Machine()
        let ids = (0..<100).map { _ in machine.nextID() }
        #expect(Set(ids).count == ids.count)
    }

    @Test("every pending highest command gets the turn before any lowest one; FIFO within a priority")
    func strictPriorityThenFIFO() {
        var machine = Machine()
        Self.queue(&machine, "L1", .lowest)
        Self.queue(&machine, "H1", .highest)
        Self.queue(&machine, "L2", .lowest, combinable: true)
        Self.queue(&machine, "H2", .highest, combinable: true)
        Self.queue(&machine, "H3", .highest)
        #expect(machine.waitingCount == 5)
        #expect(Self.drain(&machine) == ["grant H1", "apply H2", "grant H3", "grant L1", "apply L2"])
        #expect(machine.waitingCount == 0)
    }

    @Test("combining takes the same order: a combined command is applied exactly where it would have been granted")
    func combiningKeepsTheOrder() {
        var machine = Machine()
        var expected: [String] = []
        for index in 0..<20 {
            let priority: CommandPriority = index % 3 == 0 ? .highest : .lowest
            Self.queue(&machine, "\(index)", priority, combinable: index % 2 == 0)
        }
        for index in (0..<20).filter({ $0 % 3 == 0 }) + (0..<20).filter({ $0 % 3 != 0 }) {
            expected.append((index % 2 == 0 ? "apply " : "grant ") + "\(index)")
        }
        #expect(Self.drain(&machine) == expected)
    }

    @Test("a releaser applies at most combineLimit commands in a row, then hands the turn even to a combinable one")
    func combiningIsBounded() {
        var machine = Machine()
        Self.queue(&machine, "a", .lowest, combinable: true)
        Self.queue(&machine, "b", .lowest, combinable: true)
        guard case .apply(let first, _) = machine.released(combinedSoFar: Machine.combineLimit - 1) else {
            Issue.record("the last command within the limit is applied")
            return
        }
        #expect(first.name == "a")
        guard case .handOver(let second, _) = machine.released(combinedSoFar: Machine.combineLimit) else {
            Issue.record("past the limit, the next command is handed the turn")
            return
        }
        #expect(second.name == "b")
    }

    @Test("the turn word after a release: held when the last waiter left and the holder lives, contended otherwise")
    func turnWordAfterRelease() {
        var machine = Machine()
        Self.queue(&machine, "a", .lowest)
        Self.queue(&machine, "b", .lowest, combinable: true)
        guard case .handOver(_, let first) = machine.released(combinedSoFar: 0) else {
            Issue.record("a is handed the turn")
            return
        }
        #expect(first == TurnEngine.contended)  // b still waits
        guard case .apply(_, let second) = machine.released(combinedSoFar: 0) else {
            Issue.record("b is applied")
            return
        }
        #expect(second == TurnEngine.held)  // nobody waits: the next release may free the turn without the lock
        guard case .free = machine.released(combinedSoFar: 1) else {
            Issue.record("nobody waits: the turn is freed")
            return
        }
    }

    @Test("the holder released while commands wait: each still runs, in order, the turn stays contended, then retires")
    func holderReleasedWhileCommandsWait() {
        var machine = Machine()
        Self.queue(&machine, "a", .lowest, combinable: true)
        Self.queue(&machine, "b", .highest)
        #expect(machine.holderReleased(turn: TurnEngine.contended) == .none)
        #expect(!machine.isHolderAlive)
        guard case .handOver(let first, let word) = machine.released(combinedSoFar: 0) else {
            Issue.record("b is handed the turn")
            return
        }
        #expect(first.name == "b")
        #expect(word == TurnEngine.contended)
        guard case .apply(let second, let lastWord) = machine.released(combinedSoFar: 0) else {
            Issue.record("a is applied")
            return
        }
        #expect(second.name == "a")
        // Contended although nobody waits: the release after the last applied command must come to the lock.
        #expect(lastWord == TurnEngine.contended)
        guard case .retire = machine.released(combinedSoFar: 1) else {
            Issue.record("the value is retired only after the last command")
            return
        }
    }

    @Test(
        "releasing the holder: retires a free turn, marks a held one, leaves a contended or retired one",
        arguments: words
    )
    func holderReleased(turn: Int) {
        var machine = Machine()
        let action = machine.holderReleased(turn: turn)
        #expect(!machine.isHolderAlive)
        switch turn {
        case TurnEngine.free: #expect(action == .retireFreeTurn)
        case TurnEngine.held: #expect(action == .markContended)
        default: #expect(action == Machine.HolderReleasedAction.none)
        }
    }

    @Test("a release with nobody waiting frees the turn while the holder lives, retires it once it is gone")
    func releaseWithNobodyWaiting() {
        var machine = Machine()
        guard case .free = machine.released(combinedSoFar: 0) else {
            Issue.record("the turn is freed")
            return
        }
        _ = machine.holderReleased(turn: TurnEngine.held)
        guard case .retire = machine.released(combinedSoFar: 0) else {
            Issue.record("the turn is retired")
            return
        }
    }

    @Test("a cancelled waiter leaves the queue and is never handed over nor applied; one already handed over stays")
    func cancellation() {
        var machine = Machine()
        let first = machine.nextID()
        machine.enqueue(Waiter(name: "a", isCombinable: true), id: first, priority: .lowest)
        let second = machine.nextID()
        machine.enqueue(Waiter(name: "b", isCombinable: true), id: second, priority: .highest)
        let third = machine.nextID()
        machine.enqueue(Waiter(name: "c"), id: third, priority: .lowest)
        guard case .resumeCancelled(let cancelled) = machine.cancelled(id: first) else {
            Issue.record("a queued waiter is removed")
            return
        }
        #expect(cancelled.name == "a")
        guard case .apply(let applied, _) = machine.released(combinedSoFar: 0) else {
            Issue.record("b is applied")
            return
        }
        #expect(applied.name == "b")
        // b left the queue under the lock: its cancellation, coming later, finds nothing; it returns its result.
        guard case .none = machine.cancelled(id: second) else {
            Issue.record("a waiter that left the queue is not cancelled")
            return
        }
        guard case .none = machine.cancelled(id: first) else {
            Issue.record("a second cancellation finds nothing")
            return
        }
        #expect(Self.drain(&machine, combinedSoFar: 1) == ["grant c"])
    }

    @Test("a cancellation from the middle of a deep queue keeps the order of the rest")
    func cancellationKeepsOrder() {
        var machine = Machine()
        var ids: [UInt64] = []
        for index in 0..<200 {
            let id = machine.nextID()
            ids.append(id)
            machine.enqueue(Waiter(name: "\(index)"), id: id, priority: index % 2 == 0 ? .highest : .lowest)
        }
        for index in stride(from: 0, to: 200, by: 7) {
            guard case .resumeCancelled = machine.cancelled(id: ids[index]) else {
                Issue.record("waiter \(index) is removed")
                return
            }
        }
        let kept = (0..<200).filter { $0 % 7 != 0 }
        let expected = (kept.filter { $0 % 2 == 0 } + kept.filter { $0 % 2 != 0 }).map { "grant \($0)" }
        #expect(Self.drain(&machine) == expected)
    }
}
