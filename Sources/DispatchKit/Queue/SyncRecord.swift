import AtomicPrimitives

/// The queues a thread is inside through nested `GCDQueue.sync` calls, beyond the innermost one.
///
/// Inside `b.sync { }` called from queue `a`, `getSpecific` names only `b`; the thread is still inside `a`, blocked
/// there. Each `sync` called from inside a DispatchKit queue pushes that queue as a frame on the calling thread's
/// stack, so that `a.sync { b.sync { a.sync { } } }` sees it is inside `a` and runs inline instead of deadlocking.
/// Frames live on the stack of the `sync` call: no allocation.
enum SyncRecord {
    private struct Frame {
        let marker: ObjectIdentifier
        let previous: UnsafeMutableRawPointer?
    }

    private static let top = ThreadLocalPointer()

    /// Whether the calling thread is inside the queue of `marker`, directly or through nested `sync` calls.
    static func isInside(_ marker: QueueMarker, innermost: QueueMarker?) -> Bool {
        if innermost === marker { return true }
        var frame = self.top.value
        while let current = frame {
            let record = current.load(as: Frame.self)
            if record.marker == ObjectIdentifier(marker) { return true }
            frame = record.previous
        }
        return false
    }

    /// Runs `body` with `outer` recorded as a queue the calling thread is inside.
    static func withOuterQueue<Result>(_ outer: QueueMarker?, _ body: () throws -> Result) rethrows -> Result {
        guard let outer else { return try body() }
        let previous = self.top.value
        var frame = Frame(marker: ObjectIdentifier(outer), previous: previous)
        return try withUnsafeMutablePointer(to: &frame) { pointer in
            self.top.value = UnsafeMutableRawPointer(pointer)
            defer { self.top.value = previous }
            return try body()
        }
    }
}
