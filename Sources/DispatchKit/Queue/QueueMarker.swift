import AtomicPrimitives
import Dispatch
import Synchronization

#if canImport(CDispatch)
import CDispatch
#endif

/// The identity of a queue DispatchKit knows: main, a global queue, or one made by `GCDQueue(name:kind:)`.
///
/// A marker is set on its queue twice: the object under ``key`` (the queue keeps it alive), and its ``id`` under
/// ``idKey``. `DispatchQueue.getSpecific(key:)` then names the queue the caller runs in (a queue DispatchKit did not
/// make has none, except that a raw concurrent queue reports the global queue it targets). Identity checks read the
/// plain number, which costs no retain and release; ``GCDQueue/current`` reads the object. A custom queue's marker
/// holds the queue weakly, so the entry does not keep the queue alive.
@usableFromInline
final class QueueMarker: @unchecked Sendable {
    // Safety: both queue references are written once, in `init`, and only read afterwards.
    private let standardQueue: DispatchQueue?
    private weak var customQueue: DispatchQueue?
    /// Whether the queue runs one block at a time.
    let isSerial: Bool
    /// The address of the overlay's box for this marker's ``id``, once seen: see ``SpecificLookup``.
    let confirmedBoxAddress = Atomic<UInt>(0)
    /// ``SpecificLookup/shared`` and ``SyncRecord/shared``, kept here so that identity checks reach them with a load.
    private let lookup = SpecificLookup.shared
    let record = SyncRecord.shared

    /// How often the queue was suspended and not yet resumed, and the queue itself while it is: a suspended
    /// `DispatchQueue` must not be released.
    private let suspension = AtomicBox((count: 0, keptAlive: DispatchQueue?.none))

    /// The key every marker object is set under.
    static let key = DispatchSpecificKey<QueueMarker>()

    /// The key every marker's ``id`` is set under.
    static let idKey = DispatchSpecificKey<UInt>()

    /// A number that identifies this marker (its address), never 0.
    var id: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    /// For a global queue: the address of its label as Dispatch reports it from inside the queue, or 0.
    private let labelAddress: UInt

    private init(standard: DispatchQueue?, custom: DispatchQueue?, isSerial: Bool) {
        self.standardQueue = standard
        self.customQueue = custom
        self.isSerial = isSerial
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
        QueueMarker(standard: queue, custom: nil, isSerial: isSerial).installed(on: queue)
    }

    /// A marker for a queue made by DispatchKit, held weakly.
    static func custom(_ queue: DispatchQueue, isSerial: Bool) -> QueueMarker {
        QueueMarker(standard: nil, custom: queue, isSerial: isSerial).installed(on: queue)
    }

    private func installed(on queue: DispatchQueue) -> QueueMarker {
        queue.setSpecific(key: Self.key, value: self)
        queue.setSpecific(key: Self.idKey, value: self.id)
        return self
    }

    /// Whether this is a global queue's marker.
    var isGlobal: Bool {
        self.standardQueue != nil && !self.isSerial
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
        precondition(
            resumed,
            "GCDQueue.resume: queue '\(queue.label)' is not suspended; every resume() must follow a suspend()"
        )
    }

    /// Whether the queue is suspended.
    var isSuspended: Bool {
        self.suspension.value.count > 0
    }

    /// The marker of the innermost DispatchKit queue the caller runs in.
    static var innermost: QueueMarker? {
        _ = GCDQueue.standardQueuesRegistered
        return DispatchQueue.getSpecific(key: self.key)
    }

    /// The ``id`` of the innermost DispatchKit queue the caller runs in, or 0; fastest when that queue is this one.
    ///
    /// Only a queue's own marker matters to the identity checks that use this, and every `GCDQueue` installs its
    /// marker when it is made, so this skips registering the standard queues.
    var innermostID: UInt {
        self.lookup.innermostID(expecting: self)
    }

    /// Whether the calling thread runs in this marker's queue: directly, in a queue that targets it, or through `sync`
    /// calls nested inside it.
    ///
    /// A global queue counts only when the code runs in it directly.
    var isCurrent: Bool {
        let innermostID = self.innermostID
        // Running in the queue itself, the usual case, needs no look at the thread's sync record.
        let inside =
            innermostID == self.id || self.record.isInside(self.id, innermostID: innermostID, chain: self.record.chain)
        return inside && (!self.isGlobal || self.isRunningDirectly)
    }

    /// Whether the code runs in this marker's queue itself, not in a queue that targets it.
    ///
    /// The current queue's label is this queue's own (the same storage, so one pointer compare). Used for global
    /// queues, whose specifics every queue that targets them inherits.
    var isRunningDirectly: Bool {
        self.labelAddress == 0 || Self.currentLabelAddress == self.labelAddress
    }
}
