import AtomicPrimitives

/// The queues a thread is logically inside through `GCDQueue.sync` calls, beyond the one Dispatch reports.
///
/// Inside `b.sync { }` called from queue `a`, `getSpecific` names only `b`; the code is still inside `a`, which waits
/// for it. Each `sync` that leaves the calling thread records the queue it was called from (an *outer* frame) and
/// hands the caller's whole chain to the block, on whatever thread the block runs — also the main thread, or a
/// worker of `iterate` — so that `a.sync { GCDQueue.main.sync { a.sync { } } }` sees it is inside `a` and runs inline
/// instead of deadlocking. A `sync` that runs inline records its queue as an *inline* frame: it is then the innermost
/// queue, which is what ``GCDQueue/current`` reports. Frames live on the stacks of the `sync` calls: no allocation.
/// Markers keep a reference to the one instance, so that the hot path reads no lazily initialised global.
final class SyncRecord: Sendable {
    /// What a frame records.
    private enum Kind: UInt {
        /// The thread (or the thread it works for) waits in a `sync` called from inside this queue.
        case outer
        /// Code runs inside this queue without Dispatch knowing: an inline `sync`, or an iteration of `iterate`.
        case inline
    }

    /// The one instance.
    static let shared = SyncRecord()

    private let frames = ThreadFrameStack()

    private init() {}

    /// Whether the calling code is inside the queue whose marker has `id`, directly or through nested `sync`s.
    ///
    /// - Parameters:
    ///   - id: The queue's marker ``QueueMarker/id``.
    ///   - innermostID: ``QueueMarker/innermostID``, read by the caller.
    ///   - chain: The calling thread's ``chain``, read by the caller.
    /// - Returns: `true` if the code runs in that queue, or a `sync` it is nested in was called from inside it.
    func isInside(_ id: UInt, innermostID: UInt, chain: ThreadFrameStack.Chain) -> Bool {
        innermostID == id || self.frames.contains(id, in: chain)
    }

    /// The marker id of the queue an inline `sync` or an iteration runs in, if that is the innermost queue.
    var inlineInnermostID: UInt? {
        guard let top = self.frames.topFrame, top.kind == Kind.inline.rawValue else { return nil }
        return top.id
    }

    /// Runs `work` inline, as inside the queue whose marker has `id`; `chain` is the calling thread's.
    func runInline(_ id: UInt, chain: ThreadFrameStack.Chain, _ work: () -> Void) {
        self.frames.withFrame(id: id, kind: Kind.inline.rawValue, on: chain) { _ in work() }
    }

    /// Runs `dispatch`, which runs a block elsewhere and waits for it, with the queue whose marker has `outerID` (if
    /// not 0) recorded as one the calling code is inside; `dispatch` gets the chain to hand to the block.
    ///
    /// - Parameters:
    ///   - outerID: The marker id of the queue the caller runs in, or 0.
    ///   - chain: The calling thread's ``chain``, read by the caller.
    ///   - dispatch: Runs the block elsewhere; gets the chain to hand to it.
    func leaving(
        _ outerID: UInt,
        chain: ThreadFrameStack.Chain,
        _ dispatch: (_ chain: ThreadFrameStack.Chain) -> Void
    ) {
        guard outerID != 0 else { return dispatch(chain) }
        self.frames.withFrame(id: outerID, kind: Kind.outer.rawValue, on: chain, dispatch)
    }

    /// Runs `work` on the calling thread with `chain` (from ``leaving(_:_:)``) as its record.
    func adopting(_ chain: ThreadFrameStack.Chain, _ work: () -> Void) {
        guard !chain.isEmpty else { return work() }  // nothing to carry: the common case costs nothing
        self.frames.withChain(chain, work)
    }

    /// The calling thread's chain, to hand to other threads that work for it (as `iterate` does).
    var chain: ThreadFrameStack.Chain {
        self.frames.chain
    }
}
