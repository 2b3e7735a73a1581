import Synchronization

/// The word behind a ``CountingSemaphore``'s fast path: the number of free resources, or ``queued`` while somebody
/// waits in line.
///
/// While nobody waits, a wait that finds a free resource takes it, and a signal gives one back, with one
/// compare-exchange each and no lock. A caller that finds ``queued`` goes to the semaphore's lock and line instead:
/// a newcomer never takes a resource while anyone waits (no barging), and a signal then hands its resource to the
/// oldest waiter.
///
/// The rules, which make the word and the line agree:
/// - Any thread may change a count of 0 or more by one, without the lock.
/// - Only a holder of the semaphore's lock turns the word into ``queued`` (as it appends the first waiter) or out of it
///   (as the line empties). So a holder of the lock that sees ``queued`` knows nobody else changes the word.
/// - While somebody waits in line the word is ``queued``: no resource is free then, since every signal hands its
///   resource to a waiter.
///
/// Taking and giving back are acquiring and releasing, so that ThreadSanitizer sees a resource pass from the thread
/// that signalled to the thread that took it.
struct SemaphoreCount: ~Copyable {
    /// The word's value while somebody waits in line.
    static let queued = -1

    private let word: Atomic<Int>

    /// A word with `resources` free resources, 0 or more.
    init(resources: Int) {
        self.word = Atomic(resources)
    }

    /// Takes a free resource if there is one and nobody waits: one compare-exchange when nobody else races.
    @inline(__always)
    func takeIfFree() -> Bool {
        var current = self.word.load(ordering: .relaxed)
        while current > 0 {
            let attempt = self.word.compareExchange(
                expected: current,
                desired: current - 1,
                ordering: .acquiringAndReleasing
            )
            if attempt.exchanged { return true }
            current = attempt.original
        }
        return false
    }

    /// Gives a resource back if nobody waits; `false` if somebody does (then only the semaphore's lock may go on).
    ///
    /// - Precondition: The count stays at most `Int.max`.
    @inline(__always)
    func giveBackIfNobodyWaits() -> Bool {
        var current = self.word.load(ordering: .relaxed)
        while current != Self.queued {
            guarantee(current != Int.max, "CountingSemaphore: signal() would raise the resource count past Int.max")
            let attempt = self.word.compareExchange(
                expected: current,
                desired: current + 1,
                ordering: .acquiringAndReleasing
            )
            if attempt.exchanged { return true }
            current = attempt.original
        }
        return false
    }

    /// With the semaphore's lock held: takes a free resource (`true`), or marks the word ``queued`` (`false`), and
    /// the caller appends its waiter to the line before it releases the lock.
    func takeOrQueue() -> Bool {
        var current = self.word.load(ordering: .relaxed)
        while current != Self.queued {
            let attempt = self.word.compareExchange(
                expected: current,
                desired: current > 0 ? current - 1 : Self.queued,
                ordering: .acquiringAndReleasing
            )
            if attempt.exchanged { return current > 0 }
            current = attempt.original
        }
        return false
    }

    /// With the semaphore's lock held, as the line empties: nobody waits any more, and `resources` are free (1 when a
    /// signal found nobody left to take its resource, 0 otherwise).
    func lineEmptied(leaving resources: Int) {
        self.word.store(resources, ordering: .releasing)
    }

    /// The word as the wait report shows it, read at one instant: `"2 free"`, or `"none free, a line waits"`.
    var waitDescription: String {
        let current = self.word.load(ordering: .relaxed)
        return current == Self.queued ? "none free, a line waits" : "\(current) free"
    }
}
