import AtomicPrimitives
internal import ConcurrencyKitCShims
import Dispatch
import Synchronization

#if canImport(CDispatch)
import CDispatch
#endif

/// The identity of a queue DispatchKit knows: main, a global queue, or one made by `GCDQueue(name:kind:)`.
///
/// A marker is set on its queue under ``key``; the queue keeps it alive. `getSpecific` then names the innermost
/// DispatchKit queue the caller runs in (a queue DispatchKit did not make has none of its own, so it reports the queue
/// it targets, a global queue unless told otherwise). Identity checks compare ``id``s, plain numbers read without a
/// retain (see ``SpecificLookup``); ``SyncRecord`` records them. A custom queue's marker holds the queue weakly, so the
/// entry does not keep the queue alive.
@usableFromInline
final class QueueMarker: @unchecked Sendable {
    // Safety: both queue references are written once, in `init`, and only read afterwards.
    private let standardQueue: DispatchQueue?
    private weak var customQueue: DispatchQueue?
    /// Whether the queue runs one block at a time.
    let isSerial: Bool
    /// Whether this is a global queue's marker.
    let isGlobal: Bool
    /// ``SpecificLookup/shared`` and ``SyncRecord/shared``, kept here so that identity checks reach them with a load.
    let lookup = SpecificLookup.shared
    let record = SyncRecord.shared

    /// How often the queue was suspended and not yet resumed, and the queue itself while it is: a suspended
    /// `DispatchQueue` must not be released.
    private let suspension = AtomicBox((count: 0, keptAlive: DispatchQueue?.none))

    /// Where the queue was made, a ``PackedSite``; none for main and the global queues.
    private let madeAt: UInt

    /// The thread running a block that holds the queue alone, sent while syncs are recorded; 0 if none.
    ///
    /// The holder the wait report names (see ``recordedSync(_:barrier:file:line:_:)`` and ``sent(_:barrier:)``);
    /// written by that thread only.
    private let holder = Atomic<UInt>(0)
    /// Where the block was sent, a ``PackedSite`` (none for a block sent with `async`); written before ``holder``.
    private let holderSite = Atomic<UInt>(0)

    /// The key every marker is set under.
    static let key = DispatchSpecificKey<QueueMarker>()

    /// A number that identifies this marker (its address), never 0.
    var id: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    /// The marker whose ``id`` is `id`, which must be alive: the marker of a queue the caller runs in, or whose
    /// `sync` it is inside.
    static func alive(withID id: UInt) -> QueueMarker {
        Self.unmanaged(id).takeUnretainedValue()
    }

    /// What `body` reads from the marker whose ``id`` is `id`, which must be alive, without retaining it.
    static func reading<Value>(_ id: UInt, _ body: (QueueMarker) -> Value) -> Value {
        Self.unmanaged(id)._withUnsafeGuaranteedRef(body)
    }

    private static func unmanaged(_ id: UInt) -> Unmanaged<QueueMarker> {
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: id).unsafelyUnwrapped)
    }

    /// For a global queue: the address of its label as Dispatch reports it from inside the queue, or 0.
    private let labelAddress: UInt

    /// The queue as a lock, for the lock-order checker; `nil` for the global queues, which nothing holds alone.
    ///
    /// A `sync` onto a serial queue, or a barrier, waits until the caller alone holds it.
    let lockOrder: LockOrderIdentity?

    /// The queue's `dispatch_queue_t`, for a `sync` without the overlay's block; nil where it cannot be read.
    private let rawQueue: RawQueue?

    private init(
        standard: DispatchQueue?,
        custom: DispatchQueue?,
        isSerial: Bool,
        lockOrder: LockOrderIdentity?,
        madeAt: UInt = PackedSite.none
    ) {
        self.lockOrder = lockOrder
        self.madeAt = madeAt
        self.rawQueue = (standard ?? custom).flatMap(RawQueue.init)
        self.standardQueue = standard
        self.customQueue = custom
        self.isSerial = isSerial
        self.isGlobal = standard != nil && !isSerial
        self.labelAddress = standard.map { !isSerial ? $0.sync { Self.currentLabelAddress } : 0 } ?? 0
    }

    /// The address of the label of the queue the caller runs in, as Dispatch keeps it; 0 where that is not known.
    private static var currentLabelAddress: UInt {
        #if canImport(CDispatch)
        UInt(bitPattern: dispatch_queue_get_label(nil))
        #else
        0
        #endif
    }

    /// A marker for main or a global queue, which live for the whole process.
    static func standard(_ queue: DispatchQueue, isSerial: Bool) -> QueueMarker {
        let lockOrder = isSerial ? LockOrderIdentity(name: "GCDQueue.main", type: GCDQueue.self) : nil
        return QueueMarker(standard: queue, custom: nil, isSerial: isSerial, lockOrder: lockOrder).installed(on: queue)
    }

    /// A marker for a queue made by DispatchKit, held weakly; `file` and `line` are where the queue was made.
    static func custom(_ queue: DispatchQueue, isSerial: Bool, file: StaticString, line: UInt) -> QueueMarker {
        let name = "GCDQueue '\(queue.label)'"
        let lockOrder = LockOrderIdentity(name: name, type: GCDQueue.self, file: file, line: line)
        let madeAt = PackedSite.pack(file: file, line: line)
        return QueueMarker(standard: nil, custom: queue, isSerial: isSerial, lockOrder: lockOrder, madeAt: madeAt)
            .installed(on: queue)
    }

    private func installed(on queue: DispatchQueue) -> QueueMarker {
        queue.setSpecific(key: Self.key, value: self)
        return self
    }

    /// The queue, while it exists.
    var queue: DispatchQueue? {
        self.standardQueue ?? self.customQueue
    }

    /// Whether this is the main queue's marker.
    @usableFromInline
    var isMain: Bool {
        self.standardQueue != nil && self.isSerial
    }

    /// Whether this is the marker of a queue made by `GCDQueue(name:kind:)`.
    var isCustom: Bool {
        self.standardQueue == nil
    }

    /// Runs `work` on `queue`, this marker's, and waits for it; as a barrier if `barrier` and the queue is not a global
    /// queue, which takes none.
    ///
    /// While ``WaitReport/recordsQueueSyncs`` is on, the wait is recorded for the report;
    /// otherwise this costs one load more than Dispatch's own `sync`. `file` and `line` are the caller's.
    func sync(_ queue: DispatchQueue, barrier: Bool, file: StaticString, line: UInt, _ work: () -> Void) {
        let barrier = barrier && !self.isGlobal
        // A global queue is never held: a `sync` onto it only waits for a thread.
        if ck_wait_records_syncs() && !self.isGlobal {
            return self.recordedSync(queue, barrier: barrier, file: file, line: line, work)
        }
        self.dispatchSync(queue, barrier: barrier, work)
    }

    /// ``sync(_:barrier:file:line:_:)`` without a record: Dispatch's own.
    private func dispatchSync(_ queue: DispatchQueue, barrier: Bool, _ work: () -> Void) {
        if let rawQueue = self.rawQueue { return rawQueue.sync(barrier: barrier, work) }
        if barrier { return queue.sync(flags: .barrier, execute: work) }
        queue.sync(execute: work)
    }

    /// ``sync(_:barrier:file:line:_:)`` recorded for the wait report: the calling thread waits on this queue until
    /// the block starts (on whichever thread runs it: main's run on the thread that drains the main queue), and the
    /// thread that runs the block is the queue's holder while it does, if the block holds the queue alone.
    @inline(never)
    private func recordedSync(
        _ queue: DispatchQueue,
        barrier: Bool,
        file: StaticString,
        line: UInt,
        _ work: () -> Void
    ) {
        let api: StaticString = barrier ? "GCDQueue.barrierSync(_:)" : "GCDQueue.sync(_:)"
        let call = BlockingCall(api: api, alternative: "", file: file, line: line)
        let holdsAlone = barrier || self.isSerial
        let site = PackedSite.pack(file: file, line: line)
        // The queue outlives the wait: the caller holds it until `sync` returns.
        let wait = WaitRecords.begin(on: self, as: call)
        self.dispatchSync(queue, barrier: barrier) {
            WaitRecords.end(wait)
            guard holdsAlone else { return work() }
            self.holding(at: site, work)
        }
    }

    /// `block` as it is to be sent to the queue: while ``WaitReport/recordsQueueSyncs`` is on, a block that holds the
    /// queue alone (on a serial queue, or as a barrier on a queue of one's own) names the thread that runs it as the
    /// queue's holder while it runs, so that a `sync` waiting for it has a holder in the report.
    @usableFromInline
    func sent(_ block: @escaping @Sendable () -> Void, barrier: Bool = false) -> @Sendable () -> Void {
        guard ck_wait_records_syncs(), self.isSerial || (barrier && !self.isGlobal) else { return block }
        return { self.holding(at: PackedSite.none, block) }
    }

    /// Runs `work` as the queue's holder, sent at `site`.
    private func holding(at site: UInt, _ work: () -> Void) {
        self.holderSite.store(site, ordering: .releasing)
        self.holder.store(currentThreadID(), ordering: .releasing)
        defer { self.holder.store(0, ordering: .relaxed) }
        work()
    }

    // MARK: Suspension

    /// Suspends `queue`, this marker's, counting the call; the first keeps the queue alive until the last resume.
    func suspend(_ queue: DispatchQueue) {
        self.suspension.mutate { state in
            state.count += 1
            if state.count == 1 { state.keptAlive = queue }
            queue.suspend()
        }
    }

    /// Resumes `queue`, this marker's; traps if it is not suspended.
    func resume(_ queue: DispatchQueue) {
        let resumed = self.suspension.mutate { state -> Bool in
            guard state.count > 0 else { return false }
            state.count -= 1
            queue.resume()
            if state.count == 0 { state.keptAlive = nil }
            return true
        }
        guarantee(
            resumed,
            "GCDQueue.resume: queue '\(queue.label)' is not suspended; every resume() must follow a suspend()"
        )
    }

    /// Whether the queue is suspended.
    var isSuspended: Bool {
        self.suspension.value.count > 0
    }

    // MARK: Where the caller runs

    /// The ``id`` of the innermost DispatchKit queue the calling code is in, or 0.
    ///
    /// That is the queue of the record's innermost entry while Dispatch still reports the queue it was made in;
    /// otherwise the queue Dispatch reports, unless that is a global queue the code does not run in directly (but in
    /// a raw queue, which targets it).
    static var innermostID: UInt {
        _ = GCDQueue.standardQueuesRegistered
        let record = SyncRecord.shared
        let context = SpecificLookup.shared.innermostID
        if let id = record.innermostQueue(in: record.list, context: context) { return id }
        guard context != 0 else { return 0 }
        return Self.reading(context) { $0.isGlobal && !$0.isRunningDirectly } ? 0 : context
    }

    /// Whether the calling code is in this marker's queue: Dispatch reports it (the code runs in it, or in a queue
    /// that targets it), or the record has it above every boundary (through `sync` calls nested inside it).
    ///
    /// A global queue counts only as the innermost queue, run in directly: global queues are concurrent and take no
    /// barriers, so being inside one never makes a `sync` onto it deadlock, and the record leaves them out.
    var isCurrent: Bool {
        if self.isGlobal { return Self.innermostID == self.id }
        // Running in the queue itself, the usual case, needs no look at the record.
        return self.lookup.innermostID == self.id || self.record.place(of: self.id, in: self.record.list) == .inside
    }

    /// Whether the code runs in this marker's queue itself, not in a queue that targets it.
    ///
    /// The current queue's label is this queue's own (the same storage, so one pointer compare). Used for global
    /// queues, whose specifics every queue that targets them inherits.
    var isRunningDirectly: Bool {
        self.labelAddress == 0 || Self.currentLabelAddress == self.labelAddress
    }
}

extension QueueMarker: WaitTarget {
    package var waitResource: WaitReport.Resource {
        WaitReport.Resource(
            type: "GCDQueue",
            name: self.queue?.label,
            madeAt: PackedSite.describe(self.madeAt),
            identity: WaitRecords.identity(of: self)
        )
    }

    /// The thread running a block that holds the queue alone, sent while syncs are recorded, if one runs.
    package var waitHolding: WaitHolding {
        guard let holder = WaitHolding.read(holder: self.holder, site: self.holderSite) else {
            return WaitHolding(
                state: "held by no block the records know: one sent before recording began or not through "
                    + "GCDQueue, a timer's handler, a main-actor job, the main thread's own code, or a suspension"
            )
        }
        return WaitHolding(holders: [.init(id: holder.word, site: holder.site)])
    }
}
