/// The commands waiting for a value's turn, in the order they get it: the queue inside ``TurnStateMachine``.
///
/// Every highest-priority waiter comes before any lowest-priority one; within a priority, first in, first out.
struct PendingCommands<Waiter> {
    private struct Entry {
        let id: UInt64
        let waiter: Waiter
    }

    private var highest = FIFOBuffer<Entry>()
    private var lowest = FIFOBuffer<Entry>()

    /// How many commands wait.
    var count: Int { self.highest.count + self.lowest.count }

    /// Queues `waiter` behind the waiters of its priority.
    mutating func enqueue(_ waiter: Waiter, id: UInt64, priority: CommandPriority) {
        switch priority {
        case .highest: self.highest.append(Entry(id: id, waiter: waiter))
        case .lowest: self.lowest.append(Entry(id: id, waiter: waiter))
        }
    }

    /// Takes out the waiter whose turn comes next, if any.
    mutating func popNext() -> Waiter? {
        (self.highest.popFirst() ?? self.lowest.popFirst())?.waiter
    }

    /// Takes out the waiter with `id`, if it still waits.
    mutating func remove(id: UInt64) -> Waiter? {
        (self.highest.remove { $0.id == id } ?? self.lowest.remove { $0.id == id })?.waiter
    }
}
