import AtomicPrimitives

/// The queues a thread is inside through nested `GCDQueue.sync` calls, beyond the innermost one.
///
/// Inside `b.sync { }` called from queue `a`, `getSpecific` names only `b`; the thread is still inside `a`, blocked
/// there. Each `sync` called from inside a DispatchKit queue pushes that queue as a frame on the calling thread's
/// stack, so that `a.sync { b.sync { a.sync { } } }` sees it is inside `a` and runs inline instead of deadlocking.
/// Frames live on the stack of the `sync` call: no allocation. Markers keep a reference to the one instance, so that
/// the hot path reads no lazily initialised global.
final class SyncRecord: Sendable {
    private struct Frame {
        let id: UInt
        let previous: UnsafeMutableRawPointer?
    }

    /// The one instance.
    static let shared = SyncRecord()

    private let top = ThreadLocalPointer()

    private init() {}

    /// Whether the calling thread is inside the queue whose marker has `id`, directly or through nested `sync`s.
    ///
    /// - Parameters:
    ///   - id: The queue's marker ``QueueMarker/id``.
    ///   - innermostID: ``QueueMarker/innermostID``, read by the caller.
    /// - Returns: `true` if the thread runs in that queue or waits in a `sync` from inside it.
    func isInside(_ id: UInt, innermostID: UInt) -> Bool {
        if innermostID == id { return true }
        var frame = self.top.value
        while let current = frame {
            let record = current.load(as: Frame.self)
            if record.id == id { return true }
            frame = record.previous
        }
        return false
    }

    /// Runs `body` with the queue whose marker has `outerID` (if not 0) recorded as one the calling thread is inside.
    func withOuterQueue(_ outerID: UInt, _ body: () -> Void) {
        guard outerID != 0 else { return body() }
        let previous = self.top.value
        var frame = Frame(id: outerID, previous: previous)
        withUnsafeMutablePointer(to: &frame) { pointer in
            self.top.value = UnsafeMutableRawPointer(pointer)
            defer { self.top.value = previous }
            body()
        }
    }
}
