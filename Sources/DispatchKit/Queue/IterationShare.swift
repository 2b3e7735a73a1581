import AtomicPrimitives
import Dispatch

/// The work of one ``GCDQueue/iterate(_:_:)`` on a concurrent queue: `count` iterations cut into `slots` strides, each
/// run by whichever thread claims it first.
///
/// The caller claims slots too, and then waits only for the slots that other threads claimed and are running, never
/// for a worker that Dispatch has not started: nested in the iterations of another, or with the thread pool busy, it
/// does the work nobody took. (Entering the queue, it waits as a `sync` does; see ``GCDQueue/iterate(_:_:)``.) A
/// worker that starts after every slot is taken leaves at once, and never touches the iterations' block.
///
/// The block is kept only until the caller has seen every claimed slot end, so that it escapes no further than the
/// caller's `withoutActuallyEscaping`.
final class IterationShare: Sendable {
    private struct State {
        /// The next slot to claim; `slots` once all are taken.
        var nextSlot = 0
        /// How many claimed slots are running.
        var running = 0
        /// Whether the caller sleeps on `finished` until `running` is 0.
        var callerWaits = false
        /// The iterations' block; nil once the caller has seen every claimed slot end.
        var block: (@Sendable (Int) -> Void)?
    }

    private let count: Int
    private let slots: Int
    private let state: AtomicBox<State>
    private let finished = DispatchSemaphore(value: 0)

    /// Work for `count` iterations of `block`, cut into `slots` strides: slot `s` runs indexes `s`, `s + slots`, ….
    init(count: Int, slots: Int, block: @escaping @Sendable (Int) -> Void) {
        self.count = count
        self.slots = slots
        self.state = AtomicBox(State(block: block), name: "GCDQueue.iterate")
    }

    /// Claims and runs slots until none is left.
    func runSlots() {
        while self.runNextSlot() {
            self.state.mutate { state in
                state.running -= 1
                if state.running == 0 && state.callerWaits { self.finished.signal() }
            }
        }
    }

    /// Whether a slot is still unclaimed; a worker that finds none has nothing to do.
    var hasUnclaimedSlot: Bool {
        // Not `state.value`: a copy of the state is a reference to the block, and one a late worker held while the
        // caller returned would be an escape (`withoutActuallyEscaping` traps; schedule chaos found it).
        self.state.mutate { $0.nextSlot < self.slots }
    }

    /// For the caller, once it has run out of slots to claim: waits until every slot claimed by another thread has
    /// ended, then drops the block.
    func waitForClaimedSlots() {
        let mustWait = self.state.mutate { state in
            state.callerWaits = state.running > 0
            return state.callerWaits
        }
        if mustWait { self.finished.wait() }
        self.state.mutate { $0.block = nil }
    }

    /// Claims the next slot and runs it; false if none was left.
    ///
    /// The claimed block is released when this returns, before the slot is counted as ended.
    private func runNextSlot() -> Bool {
        let claim = self.state.mutate { state -> (slot: Int, block: @Sendable (Int) -> Void)? in
            guard state.nextSlot < self.slots, let block = state.block else { return nil }
            defer { state.nextSlot += 1 }
            state.running += 1
            return (state.nextSlot, block)
        }
        guard let (slot, block) = claim else { return false }
        for index in stride(from: slot, to: self.count, by: self.slots) { block(index) }
        return true
    }
}
