import Dispatch

/// Where the package's async waits record the tasks they suspend, for ``WaitReport``.
///
/// A task has no record of its own that another thread could read, as a thread has (``WaitRecords``), so its waits
/// and holds are entries in one registry: a list under a lock, an entry linked in when a task suspends in a wait (at
/// the point where it is known to suspend, never on a path that returns without suspending) and unlinked when it
/// resumes, whichever way: granted, cancelled or timed out. Each entry costs one allocation and one short critical
/// section to link, one to unlink: on a path that suspends anyway.
///
/// A task that suspends inside a ``TaskWaitScope`` (a `TestClock.run`) also counts itself in that scope while it is
/// parked, so that the scope's owner can tell when everything in it waits.
package enum TaskWaits {
    /// The calling task's identity, as the report shows it; 0 outside a task.
    package static var currentTask: UInt {
        withUnsafeCurrentTask { task in task.map { unsafeBitCast($0, to: UInt.self) } ?? 0 }
    }

    /// Records that the calling task suspends now in `call` on `target`; end it with ``end(_:)`` once it resumes.
    ///
    /// Call it where the task is known to suspend: inside the continuation's closure, once the wait is queued. The
    /// entry keeps `target` alive until it ends.
    ///
    /// - Parameters:
    ///   - target: What it waits on; a ``WaitTarget`` is described by the report, anything else by its type.
    ///   - call: The public call and where it was made.
    ///   - state: A word on the wait's own state (a sleep's deadline), shown instead of the target's.
    ///   - parks: Whether the wait counts as parked in the calling task's ``TaskWaitScope``: a wait that only
    ///     another task can end (a semaphore, a value's turn), not a sleep on the scope's own clock.
    /// - Returns: The entry, for ``end(_:)``.
    package static func begin(
        on target: AnyObject,
        as call: BlockingCall,
        state: String? = nil,
        parks: Bool = true
    ) -> TaskWaitEntry {
        let scope = parks ? TaskWaitScope.current : nil
        let entry = TaskWaitEntry(
            task: Self.currentTask,
            target: target,
            resource: WaitRecords.identity(of: target),
            call: call,
            state: state,
            scope: scope
        )
        Self.registry.link(entry)
        scope?.parked(entry)
        return entry
    }

    /// Records that the wait of `entry` has ended.
    package static func end(_ entry: TaskWaitEntry) {
        Self.registry.unlink(entry)
        entry.scope?.unparked(entry)
    }

    /// How many waits are recorded now on the resource whose identity (``WaitReport/Resource/identity``)
    /// is `resource`.
    package static func count(on resource: UInt) -> Int {
        Self.registry.withEntries { entries in entries.count { $0.resource == resource } }
    }

    /// Every task that waits now, as the report reads threads.
    static func tasks() -> [WaitRecords.ThreadRecord] {
        // The entries keep their targets alive: they are asked about themselves after the lock is released.
        Self.registry.withEntries { $0 }.map { entry in
            WaitRecords.ThreadRecord(
                waiter: WaitReport.Waiter(kind: .task, id: entry.task),
                wait: Self.record(of: entry, on: entry.target)
            )
        }
    }

    /// The report's view of the wait of `entry`, asked of its target, which the entry keeps alive.
    private static func record(of entry: TaskWaitEntry, on target: AnyObject) -> WaitRecords.WaitRecord {
        let resource: WaitReport.Resource
        var holding = WaitHolding()
        if let target = target as? any WaitTarget {
            resource = target.waitResource
            holding = target.waitHolding
        } else {
            resource = WaitReport.Resource(
                type: "\(type(of: target))",
                name: nil,
                madeAt: nil,
                identity: entry.resource
            )
        }
        if let state = entry.state { holding.state = state }
        return WaitRecords.WaitRecord(
            call: "\(entry.call.api)",
            site: Self.site(of: entry.call) ?? "an unknown site",
            since: entry.since,
            resource: resource,
            holding: holding
        )
    }

    private static func site(of call: BlockingCall) -> String? {
        guard call.file.hasPointerRepresentation, call.file.utf8CodeUnitCount > 0 else { return nil }
        return call.line == 0 ? "\(call.file)" : "\(call.file):\(call.line)"
    }

    /// The registry: a doubly linked list of entries under a lock.
    private static let registry = TaskWaitRegistry()
}

/// One task's wait, linked into the registry of ``TaskWaits``.
package final class TaskWaitEntry {
    let task: UInt
    /// What the task waits on.
    let target: AnyObject
    let resource: UInt
    let call: BlockingCall
    let state: String?
    let since: UInt64
    let scope: TaskWaitScope?
    // Guarded by the registry's lock.
    var previous: TaskWaitEntry?
    var next: TaskWaitEntry?

    init(task: UInt, target: AnyObject, resource: UInt, call: BlockingCall, state: String?, scope: TaskWaitScope?) {
        self.task = task
        self.target = target
        self.resource = resource
        self.call = call
        self.state = state
        self.since = DispatchTime.now().uptimeNanoseconds
        self.scope = scope
    }
}

// Safety: the links are touched only under the registry's lock; everything else is immutable.
extension TaskWaitEntry: @unchecked Sendable {}

/// The list behind ``TaskWaits``.
private final class TaskWaitRegistry: @unchecked Sendable {
    // Safety: `head` and every entry's links are touched only while `lock` is held.
    private let lock = LockCore(unobserved: ())
    private var head: TaskWaitEntry?

    func link(_ entry: TaskWaitEntry) {
        self.lock.lock(onReentry: { Self.trapReentry() })
        entry.next = self.head
        self.head?.previous = entry
        self.head = entry
        self.lock.unlock()
    }

    func unlink(_ entry: TaskWaitEntry) {
        self.lock.lock(onReentry: { Self.trapReentry() })
        if let previous = entry.previous {
            previous.next = entry.next
        } else {
            self.head = entry.next
        }
        entry.next?.previous = entry.previous
        entry.previous = nil
        entry.next = nil
        self.lock.unlock()
    }

    /// Runs `body` on every entry, the newest first, under the lock: `body` must not wait or record.
    func withEntries<Result>(_ body: ([TaskWaitEntry]) -> Result) -> Result {
        self.lock.lock(onReentry: { Self.trapReentry() })
        defer { self.lock.unlock() }
        var entries: [TaskWaitEntry] = []
        var current = self.head
        while let entry = current {
            entries.append(entry)
            current = entry.next
        }
        return body(entries)
    }

    private static func trapReentry() -> Never {
        halt("TaskWaits: registry lock re-entered; this is a bug in ConcurrencyKit.")
    }
}
