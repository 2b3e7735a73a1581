import Dispatch

/// A snapshot of every wait in progress in ConcurrencyKit's primitives: who waits, on what, since when, and who holds
/// it; with every cycle of waits named as a deadlock.
///
/// ```swift
/// import AtomicPrimitives
///
/// let report = WaitReport.current
/// print(report.waits.isEmpty)  // true
/// print(report.deadlocks.isEmpty)  // true
/// ```
///
/// A thread appears once it parks in one of the package's waits: a ``MutexLock`` or ``AtomicBox`` whose lock was
/// taken, a ``CountingSemaphore`` with nothing free, a `QueueSafeValue`'s turn, a `GCDGroup` or `Queuer` wait; a task
/// once it suspends in one of their async forms, or in a `TestClock` sleep; a `GCDQueue.sync` on request (see
/// ``recordsQueueSyncs``). Each wait names the call and where it was made, what it waits on (the type, the name given
/// at `init`, where it was made), how long it has waited, and who holds what it waits on, with where they took it: the
/// owner of a lock, the thread running a value's command closure, the thread or task inside a one-resource
/// semaphore's `perform` or `withPermit`, the thread in a recorded `sync`'s block.
///
/// The holders make a wait-for graph between threads. Every cycle in it is a deadlock: each thread in it waits for
/// something that the next one holds, and none can go on. A cycle is only named after a second look finds the same
/// waits still in place, so a cycle the report names is real, not a moment of a hand-over.
///
/// Taking the report stops nobody: it reads each thread's own record as that thread goes on. Only a thread that ends
/// its wait while its record is being copied waits, for that copy. A wait records itself only when it parks.
///
/// Print it from a debugger (`expr print(WaitReport.current)`), from a signal handler's thread, or let
/// ``WaitWatchdog`` print it when a wait lasts too long.
public struct WaitReport: Sendable, CustomStringConvertible {
    /// Every wait in progress, the longest first.
    public let waits: [Wait]
    /// Every cycle of waits, confirmed by a second look.
    public let deadlocks: [Deadlock]

    /// Whether a `GCDQueue.sync` (or `barrierSync`) records its wait, so that reports list it; off by default.
    ///
    /// ```swift
    /// import AtomicPrimitives
    ///
    /// print(WaitReport.recordsQueueSyncs)  // false
    /// WaitReport.recordsQueueSyncs = true
    /// print(WaitReport.recordsQueueSyncs)  // true
    /// WaitReport.recordsQueueSyncs = false
    /// ```
    ///
    /// Dispatch decides inside its own `sync` whether the caller waits, so a recorded `sync` records itself before
    /// it calls Dispatch, whether it will wait or not, and ends the record when its block starts: a coarse clock
    /// read, a few stores and a fence, about a third more than an uncontended `sync` costs (measured on Linux
    /// x86-64). While off, a `sync` pays one load. While on, a block that holds a queue alone (any block on a
    /// serial queue or main, a barrier on a queue of one's own), sent through `GCDQueue` (`sync`, `async`, `after`,
    /// a group's `async` or `notify`), names the thread that runs it as the queue's holder while it runs; a block sent
    /// before recording began, or straight to the `DispatchQueue`, and the main thread's own code are no holder the
    /// report knows; such an `async` costs one allocation more. How long a recorded `sync` has waited is read to a
    /// few milliseconds.
    public static var recordsQueueSyncs: Bool {
        get { WaitRecords.recordsSyncs }
        set { WaitRecords.recordsSyncs = newValue }
    }

    /// A report of the waits in progress now.
    public static var current: WaitReport {
        let first = Self.snapshot()
        guard !first.cycles.isEmpty else { return WaitReport(waits: first.waits, deadlocks: []) }
        // A cycle is named only if a second look finds each of its waits still there, still held by the next.
        let second = Self.snapshot()
        let confirmed = first.cycles.filter { cycle in
            second.cycles.contains { $0.count == cycle.count && Set($0.map(\.key)) == Set(cycle.map(\.key)) }
        }
        return WaitReport(waits: second.waits, deadlocks: confirmed.map { Deadlock(waits: $0) })
    }

    /// The report as text: the deadlocks first, edge by edge, then every wait.
    public var description: String {
        var lines = [
            "ConcurrencyKit wait report: \(Self.count(self.waits.count, "wait")), "
                + "\(Self.count(self.deadlocks.count, "deadlock"))"
        ]
        for (index, deadlock) in self.deadlocks.enumerated() {
            lines.append("")
            lines.append("Deadlock \(index + 1) of \(self.deadlocks.count): \(deadlock)")
        }
        if !self.waits.isEmpty {
            lines.append("")
            lines.append("Waits, the longest first:")
            lines += self.waits.map { "- \($0)" }
        }
        return lines.joined(separator: "\n")
    }

    static func count(_ count: Int, _ noun: String) -> String {
        count == 1 ? "1 \(noun)" : "\(count) \(noun)s"
    }

    /// One look at the records: the waits, and the cycles among them.
    private static func snapshot() -> (waits: [Wait], cycles: [[Wait]]) {
        // Threads from their own records, tasks from the task registry: one list of waiters for the graph.
        let threads = WaitRecords.threads() + TaskWaits.tasks()
        let now = DispatchTime.now().uptimeNanoseconds
        var waiters: [Waiter: Waiter] = [:]
        for thread in threads { waiters[Waiter(kind: thread.waiter.kind, id: thread.waiter.id)] = thread.waiter }
        var waits: [Wait] = []
        for thread in threads {
            let record = thread.wait
            let holders = record.holding.holders.map { holder in
                // A holder that waits itself is named as its record names it; any other by its identity alone.
                let bare = Waiter(kind: holder.isTask ? .task : .thread, id: holder.id)
                return Holder(waiter: waiters[bare] ?? bare, site: PackedSite.describe(holder.site))
            }
            waits.append(
                Wait(
                    waiter: thread.waiter,
                    call: record.call,
                    site: record.site,
                    resource: record.resource,
                    duration: .nanoseconds(Int64(clamping: now &- min(record.since, now))),
                    holders: holders,
                    state: record.holding.state,
                    since: record.since
                )
            )
        }
        waits.sort { $0.duration > $1.duration }
        return (waits, Self.cycles(in: waits))
    }

    /// The cycles of the wait-for graph: threads each of which waits for something that only threads of the cycle's
    /// deadlocked set hold.
    ///
    /// First the deadlocked set: the waiting threads, less, until none is left to remove, every one that waits for
    /// something with no known holder or with a holder that does not wait in the set (that holder can still go on
    /// and release). Then each cycle in it, from its oldest wait, following the first holder that is in the set.
    private static func cycles(in waits: [Wait]) -> [[Wait]] {
        var waitOf: [Waiter: Wait] = [:]
        for wait in waits { waitOf[wait.waiter] = wait }
        var stuck = Set(waitOf.keys)
        var changed = true
        while changed {
            changed = false
            for thread in stuck {
                let holders = waitOf[thread]!.holders
                if holders.isEmpty || holders.contains(where: { !stuck.contains($0.waiter) }) {
                    stuck.remove(thread)
                    changed = true
                }
            }
        }
        var named = Set<Waiter>()
        var cycles: [[Wait]] = []
        for start in waits.map(\.waiter) where stuck.contains(start) && !named.contains(start) {
            var path: [Waiter] = []
            var current = start
            while !path.contains(current) && !named.contains(current) {
                path.append(current)
                current = waitOf[current]!.holders.first { stuck.contains($0.waiter) }!.waiter
            }
            if let loopStart = path.firstIndex(of: current) {
                let loop = Array(path[loopStart...])
                cycles.append(loop.map { waitOf[$0]! })
            }
            named.formUnion(path)
        }
        return cycles
    }
}
