import Dispatch

/// The identity of a queue DispatchKit knows: main, a global queue, or one made by `GCDQueue(name:kind:)`.
///
/// A marker is set on its queue under ``key``, so `DispatchQueue.getSpecific(key:)` names the queue the caller runs
/// in (a queue DispatchKit did not make has none, except that a raw concurrent queue reports the global queue it
/// targets). A custom queue's marker holds the queue weakly, so the entry does not keep the queue alive.
final class QueueMarker: @unchecked Sendable {
    // Safety: both queue references are written once, in `init`, and only read afterwards.
    private let standardQueue: DispatchQueue?
    private weak var customQueue: DispatchQueue?
    /// Whether the queue runs one block at a time.
    let isSerial: Bool

    /// The one key every marker is set under.
    static let key = DispatchSpecificKey<QueueMarker>()

    private init(standard: DispatchQueue?, custom: DispatchQueue?, isSerial: Bool) {
        self.standardQueue = standard
        self.customQueue = custom
        self.isSerial = isSerial
    }

    /// A marker for main or a global queue, which live for the whole process.
    static func standard(_ queue: DispatchQueue, isSerial: Bool) -> QueueMarker {
        let marker = QueueMarker(standard: queue, custom: nil, isSerial: isSerial)
        queue.setSpecific(key: self.key, value: marker)
        return marker
    }

    /// A marker for a queue made by DispatchKit, held weakly.
    static func custom(_ queue: DispatchQueue, isSerial: Bool) -> QueueMarker {
        let marker = QueueMarker(standard: nil, custom: queue, isSerial: isSerial)
        queue.setSpecific(key: self.key, value: marker)
        return marker
    }

    /// The queue, while it exists.
    var queue: DispatchQueue? {
        self.standardQueue ?? self.customQueue
    }

    /// The marker of the innermost DispatchKit queue the caller runs in.
    static var innermost: QueueMarker? {
        _ = GCDQueue.standardQueuesRegistered
        return DispatchQueue.getSpecific(key: self.key)
    }
}
