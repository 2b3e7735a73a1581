import Synchronization

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
    /// Who holds it as far as it knows itself (the lock's owner, the thread in the value's command closure, the
    /// thread or task inside a one-resource semaphore's `perform` or `withPermit`), and a word on its state.
    var waitHolding: WaitHolding { get }
}

/// What a ``WaitTarget`` knows of its holders now.
package struct WaitHolding {
    /// One holder: a thread by ``currentThreadID()``, or a task by ``TaskWaits/currentTask``, and where it took the
    /// resource (a ``PackedSite``; 0 if unknown).
    package struct Holder {
        package var id: UInt
        package var isTask: Bool
        package var site: UInt

        /// - Parameters:
        ///   - id: The thread's or task's identity.
        ///   - isTask: Whether it is a task.
        ///   - site: Where it took the resource.
        package init(id: UInt, isTask: Bool = false, site: UInt) {
            self.id = id
            self.isTask = isTask
            self.site = site
        }
    }

    /// The holders.
    package var holders: [Holder]
    /// A word on the target's state, or `nil`.
    package var state: String?

    /// - Parameters:
    ///   - holders: The holders and where each took it.
    ///   - state: A word on the target's state.
    package init(holders: [Holder] = [], state: String? = nil) {
        self.holders = holders
        self.state = state
    }

    /// Reads, from another thread, a holder word and the site its holder stored in `site` before it.
    ///
    /// A holder stores its site, then its word, both with releasing stores. A site read between two equal, nonzero
    /// reads of the word is that holder's: a later holder stores its site only after the earlier one's word was
    /// cleared or replaced, so reading the later site (acquiring) orders the second read of the word after that
    /// clear. Unless the same holder left and came back between the two reads: the site may then be that of a holder
    /// in between, for one report. A deadlock is named only after a second look, so this can mislabel a site, never
    /// make a cycle.
    ///
    /// - Parameters:
    ///   - holder: The holder word; 0 when nobody holds.
    ///   - site: Where the holder took it, a ``PackedSite``.
    /// - Returns: The holder word and its site; `nil` if nobody holds, or if the holder changed between the reads.
    package static func read(
        holder: borrowing Atomic<UInt>,
        site: borrowing Atomic<UInt>
    ) -> (word: UInt, site: UInt)? {
        let word = holder.load(ordering: .acquiring)
        // Acquiring, so that the second read of the word is made after this one.
        let stored = site.load(ordering: .acquiring)
        guard word != 0, holder.load(ordering: .relaxed) == word else { return nil }
        return (word, stored)
    }
}
