/// Something a thread or task can wait on that the wait report can describe: a lock, a semaphore, a value's turn, a
/// queue, a group.
///
/// The report asks it while the waiter is held in its wait (so the target is alive), from another thread, without
/// its lock: every requirement must answer from what it can read at once (atomics, and fields set at `init`), and
/// never take a lock, not even one of Foundation's: the thread that holds that lock may itself be parked in one of
/// our waits, held there until the report moves on.
package protocol WaitTarget: AnyObject {
    /// How the report names it: its type, the name it was given, where it was made.
    var waitResource: WaitReport.Resource { get }
    /// Who holds it as far as it knows itself (the lock's owner, the thread in the value's command closure), and a
    /// word on its state ("0 free, 3 waiting"). Holders that only their own records know (a semaphore's permits
    /// taken by `perform`) the report finds itself.
    var waitHolding: WaitHolding { get }
}

/// What a ``WaitTarget`` knows of its holders now.
package struct WaitHolding {
    /// The holding threads by ``currentThreadID()``, and where each took it (a ``PackedSite``; 0 if unknown).
    package var holders: [(thread: UInt, site: UInt)]
    /// A word on the target's state, or `nil`.
    package var state: String?

    /// - Parameters:
    ///   - holders: The holding threads and where each took it.
    ///   - state: A word on the target's state.
    package init(holders: [(thread: UInt, site: UInt)] = [], state: String? = nil) {
        self.holders = holders
        self.state = state
    }
}
