import AtomicPrimitives
import Synchronization

/// A thread in a `wait` command that queued for the turn: it watches for the grant a short while, then sleeps.
///
/// A manual `async` command's completion waits on one, too, for its command's release: it is sent to the queue just
/// before the release, so that it keeps its place among completions, and must not start before it.
///
/// Handing the turn to a thread that already sleeps costs a wake-up, tens of microseconds on a VM; two threads taking
/// turns on one value would pay one per command. Watching first lets a command that is granted soon (the usual
/// case: the holder's closure is short) go on without ever sleeping.
@usableFromInline
final class ParkedThread: @unchecked Sendable {
    private static let watching = 0
    private static let granted = 1
    private static let sleeping = 2

    /// How many times the waiter looks for its grant before it starts yielding its CPU: under a microsecond.
    private static let looks = 200
    /// How many times it yields its CPU and looks again before it sleeps: longer than a sleeping thread takes to wake,
    /// so that two threads taking turns do not settle into waking each other for every command.
    private static let yields = 64

    private let state = Atomic<Int>(ParkedThread.watching)
    // Safety: written by the waiting thread before it publishes `sleeping` (releasing); read by the granting thread
    // only after it has seen `sleeping` (acquiring). Made only by a waiter that goes to sleep, so that a grant that
    // comes while the waiter watches, the usual case, costs no semaphore.
    private var wakeUp: CountingSemaphore?

    @usableFromInline
    init() {}

    /// Returns once ``grant()`` was called: at once if it was already.
    @usableFromInline
    func waitForGrant() {
        for _ in 0..<Self.looks {
            if self.state.load(ordering: .acquiring) == Self.granted { return }
        }
        for _ in 0..<Self.yields {
            yieldProcessor()
            if self.state.load(ordering: .acquiring) == Self.granted { return }
        }
        let wakeUp = CountingSemaphore(.barrier)
        self.wakeUp = wakeUp
        let slept = self.state.compareExchange(
            expected: Self.watching,
            desired: Self.sleeping,
            ordering: .acquiringAndReleasing
        )
        if slept.exchanged { wakeUp.wait(as: nil) }
    }

    /// Gives the turn to the waiting thread, waking it if it sleeps.
    @usableFromInline
    func grant() {
        if self.state.exchange(Self.granted, ordering: .acquiringAndReleasing) == Self.sleeping {
            self.wakeUp?.signal()
        }
    }
}
