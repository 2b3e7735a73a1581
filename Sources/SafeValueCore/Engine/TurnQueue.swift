/// Whose turn it is to use the value, and who waits for it: the pure state machine behind ``ValueStorage``.
///
/// One turn exists. A command takes it if it is free; otherwise it waits in the queue of its priority. Releasing the
/// turn hands it straight to the next waiter — every highest-priority waiter before any lowest-priority one, each
/// queue first-in-first-out — so the turn is free only when nobody waits, and a command issued on a free value starts
/// at once.
struct TurnQueue<Waiter> {
    private struct Entry {
        let id: UInt64
        let waiter: Waiter
    }

    private(set) var isHeld = false
    private var highest = FIFOBuffer<Entry>()
    private var lowest = FIFOBuffer<Entry>()

    /// How many commands wait for the turn.
    var waitingCount: Int { self.highest.count + self.lowest.count }

    /// Takes the turn if it is free.
    mutating func tryAcquire() -> Bool {
        guard !self.isHeld else { return false }
        self.isHeld = true
        return true
    }

    /// Queues `waiter` behind the current holder and the waiters of its priority.
    mutating func enqueue(_ waiter: Waiter, id: UInt64, priority: CommandPriority) {
        precondition(self.isHeld, "a command may only wait while the turn is held")
        switch priority {
        case .highest: self.highest.append(Entry(id: id, waiter: waiter))
        case .lowest: self.lowest.append(Entry(id: id, waiter: waiter))
        }
    }

    /// Ends the current turn: returns the waiter that now holds it, or `nil` if the turn is free.
    mutating func release() -> Waiter? {
        precondition(self.isHeld, "released a turn nobody held")
        if let next = self.highest.popFirst() ?? self.lowest.popFirst() {
            return next.waiter
        }
        self.isHeld = false
        return nil
    }

    /// Takes the waiter with `id` out of its queue, if it still waits there.
    mutating func remove(id: UInt64) -> Waiter? {
        (self.highest.remove { $0.id == id } ?? self.lowest.remove { $0.id == id })?.waiter
    }
}
