import Dispatch
import Synchronization

/// A thread waiting for its own grant: it watches its own word a short while, then sleeps until ``grant()`` wakes it.
///
/// Each waiter has its own record, so a grant wakes exactly the thread it is for, and only when that thread has gone
/// to sleep: handing over to a thread that still watches costs one atomic exchange and no wake-up. Handing a turn to a
/// thread that already sleeps costs a wake-up, tens of microseconds on a VM; two threads taking turns would pay one
/// per hand-over. Watching first lets a waiter that is granted soon (the usual case: the holder's work is short) go on
/// without ever sleeping.
///
/// The spin policy: watching burns a processor, which only pays while the thread that will grant is running on
/// another one. So a waiter watches only while fewer threads of the process are watching than there are processors
/// less one (kept in one process-wide count, as Go's `sync.Mutex` asks `canSpin` and WebKit's `WTF::Lock` bounds its
/// spinning before it parks); otherwise it sleeps at once. Nobody watches on a single processor, and with more waiters
/// than processors the extra ones sleep instead of taking processor time from the holder. The watch is bounded
/// (``looks`` looks, then ``yields`` yields of the processor, each followed by a look), about as long as a sleeping
/// thread takes to wake.
///
/// A timed wait, ``waitForGrant(untilUptimeNanoseconds:)``, settles the race between its deadline and a grant with one
/// compare-exchange on the same word: whichever comes first wins, and ``handOver()`` tells the granting side which.
///
/// Used by `CountingSemaphore` for its blocked threads and by SafeValueCore's turn hand-over.
@usableFromInline
package final class ParkedThread: @unchecked Sendable {
    private static let watching = 0
    private static let granted = 1
    private static let sleeping = 2
    private static let timedOut = 3

    /// How many times the waiter looks for its grant before it starts yielding its processor: under a microsecond.
    private static let looks = 200
    /// How many times it yields its processor and looks again before it sleeps: longer than a sleeping thread takes to
    /// wake, so that two threads taking turns do not settle into waking each other for every hand-over.
    private static let yields = 64

    /// How many threads of the process are watching their grant right now.
    private static let watchers = Atomic<Int>(0)
    /// The most threads that may watch at once: the processors less one, for the thread that will grant.
    package static let watcherLimit = usableProcessorCount() - 1

    /// How many threads of the process watch their grant at this instant; for tests of the spin policy.
    package static var watchingNow: Int {
        Self.watchers.load(ordering: .relaxed)
    }

    private let state = Atomic<Int>(ParkedThread.watching)
    // Safety: written by the waiting thread before it publishes `sleeping` (releasing); read by the granting thread
    // only after it has seen `sleeping` (acquiring). Made only by a waiter that goes to sleep, so that a grant that
    // comes while the waiter watches, the usual case, allocates nothing.
    private var bed: Bed?

    /// Makes the record of a thread that is about to wait; nobody has granted it yet.
    @usableFromInline
    package init() {}

    /// Returns once ``grant()`` was called: at once if it was already.
    ///
    /// - Parameter waiting: What the wait report shows the thread waiting on (a ``WaitTarget``) and for which call,
    ///   once it sleeps; `nil` records nothing.
    @usableFromInline
    package func waitForGrant(reporting waiting: (target: AnyObject, call: BlockingCall)? = nil) {
        _ = self.waitForGrant(untilUptimeNanoseconds: .max, reporting: waiting)
    }

    /// Returns once ``grant()`` was called, or the deadline passed first.
    ///
    /// - Parameters:
    ///   - deadline: A `DispatchTime.uptimeNanoseconds` value; `UInt64.max` waits without a limit.
    ///   - waiting: What the wait report shows the thread waiting on and for which call, once it sleeps: a thread
    ///     that is granted while it watches records nothing.
    /// - Returns: `true` if granted. `false` if the deadline won: from then on ``handOver()`` returns
    ///   ``HandOver/timedOut``, so whoever would grant knows the waiter has left.
    package func waitForGrant(
        untilUptimeNanoseconds deadline: UInt64,
        reporting waiting: (target: AnyObject, call: BlockingCall)? = nil
    ) -> Bool {
        if self.watch(untilUptimeNanoseconds: deadline) { return true }
        guard let waiting else { return self.sleep(untilUptimeNanoseconds: deadline) }
        return WaitRecords.whileParked(on: waiting.target, as: waiting.call) {
            self.sleep(untilUptimeNanoseconds: deadline)
        }
    }

    /// Sleeps until granted or the deadline passes, unless a grant or the deadline came while it watched.
    private func sleep(untilUptimeNanoseconds deadline: UInt64) -> Bool {
        let bed = Bed()
        self.bed = bed
        // Publishes `bed` (releasing), and fails only if a grant or the deadline came first.
        let slept = self.state.compareExchange(
            expected: Self.watching,
            desired: Self.sleeping,
            ordering: .acquiringAndReleasing
        )
        if !slept.exchanged { return slept.original == Self.granted }
        return bed.sleep(until: deadline) { self.state.load(ordering: .acquiring) == Self.granted } ?? self.giveUp()
    }

    /// Watches for the grant while the spin policy allows; `true` if granted, `false` if it must sleep now (or the
    /// deadline passed: then the state is already ``timedOut`` or granted, and the caller's compare-exchange fails).
    private func watch(untilUptimeNanoseconds deadline: UInt64) -> Bool {
        // A seat is taken only while one is free, so that the count never exceeds the limit, not even for an instant.
        var watchers = Self.watchers.load(ordering: .relaxed)
        while true {
            guard watchers < Self.watcherLimit else { return false }
            let taken = Self.watchers.compareExchange(expected: watchers, desired: watchers + 1, ordering: .relaxed)
            if taken.exchanged { break }
            watchers = taken.original
        }
        defer { Self.watchers.wrappingSubtract(1, ordering: .relaxed) }
        for _ in 0..<Self.looks where self.state.load(ordering: .acquiring) == Self.granted {
            return true
        }
        for _ in 0..<Self.yields {
            yieldProcessor()
            if self.state.load(ordering: .acquiring) == Self.granted { return true }
            if deadline != .max && DispatchTime.now().uptimeNanoseconds >= deadline { return self.giveUp() }
        }
        return false
    }

    /// Ends a timed wait whose deadline has passed, unless a grant came first.
    ///
    /// The one compare-exchange that settles that race. `true` if it was granted after all.
    private func giveUp() -> Bool {
        let current = self.state.load(ordering: .acquiring)
        guard current != Self.granted else { return true }
        // Lets a test land a grant exactly here, between the look and the compare-exchange.
        chaosPoint(.semaphoreLine)
        let ending = self.state.compareExchange(
            expected: current,
            desired: Self.timedOut,
            ordering: .acquiringAndReleasing
        )
        return !ending.exchanged
    }

    /// What a grant found: the waiter watching, asleep, or gone because its deadline passed.
    package enum HandOver {
        /// Granted to a thread that is watching: it goes on by itself.
        case running
        /// Granted to a sleeping thread: call ``wake()``, preferably after releasing any lock.
        case sleeping
        /// Not granted: the waiter's deadline passed first and it left; give what it waited for to someone else.
        case timedOut
    }

    /// Grants the waiter what it waits for, unless its deadline won.
    ///
    /// It does not wake a sleeping waiter: see ``HandOver/sleeping``. Granting a waiter that is already granted does nothing (``HandOver/running``).
    package func handOver() -> HandOver {
        var expected = Self.watching
        while true {
            let attempt = self.state.compareExchange(
                expected: expected,
                desired: Self.granted,
                ordering: .acquiringAndReleasing
            )
            if attempt.exchanged { return expected == Self.sleeping ? .sleeping : .running }
            switch attempt.original {
            case Self.timedOut: return .timedOut
            // Granted already: nothing more to do, as a second `grant()` always did.
            case Self.granted: return .running
            default: expected = attempt.original
            }
        }
    }

    /// Wakes the waiter that ``handOver()`` found ``HandOver/sleeping``.
    package func wake() {
        self.bed?.wake()
    }

    /// Gives the waiter its grant, waking it if it sleeps; for waits without a deadline, which a grant always reaches.
    @usableFromInline
    package func grant() {
        if self.handOver() == .sleeping { self.wake() }
    }

    /// Where a waiter sleeps: a mutex and a condition of its own, so that a wake-up reaches exactly this thread.
    private final class Bed {
        private let condition = ConditionCore()

        /// Sleeps until `isGranted` holds or the deadline passes; `true` when granted, `nil` when the deadline passed.
        func sleep(until deadline: UInt64, isGranted: () -> Bool) -> Bool? {
            self.condition.lock()
            defer { self.condition.unlock() }
            while !isGranted() {
                if !self.condition.wait(untilUptimeNanoseconds: deadline) && !isGranted() {
                    return nil
                }
            }
            return true
        }

        /// Wakes the sleeper, whose grant is already published.
        func wake() {
            // Taking the mutex orders the wake-up after the sleeper's last look.
            self.condition.lock()
            self.condition.signal()
            self.condition.unlock()
        }
    }
}
