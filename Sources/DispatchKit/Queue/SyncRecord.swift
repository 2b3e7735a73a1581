import AtomicPrimitives

/// The queues the calling code is inside through `GCDQueue.sync` calls, which Dispatch's `getSpecific` does not show.
///
/// Inside `b.sync { }` called from queue `a`, Dispatch names only `b`, yet the code is still inside `a`: `a` waits for
/// it. So each thread keeps a list of *entries*, innermost first, each in the stack frame of the `sync` that made it:
/// - a `sync` that leaves for another queue records the queue it leaves, or that it leaves none (a global queue, or
///   none, only when the list has entries already: being inside a global queue never makes a `sync` deadlock);
/// - a `sync` that runs inline records its queue.
///
/// Each entry also keeps the marker id Dispatch reported when it was made, its *context*. The innermost entry is the
/// innermost queue only while Dispatch still reports that context. Inside the block of a `sync` that did not run
/// inline, Dispatch reports another queue than the one the `sync` left and recorded, so Dispatch's answer is the
/// innermost queue there, until a `sync` runs inline again.
///
/// A thread that waits in `sync` lends its list to the thread that runs the block (the main thread, for
/// `GCDQueue.main`): one thread at a time acts for a list, so an entry means that queue is held for this code alone.
/// The workers of `iterate` act for their caller all at once, so each sees the caller's list behind a *boundary*: the
/// queues below it are held by a thread that waits for the worker, which can neither run inside them nor wait for
/// them.
///
/// The thread's innermost entry is kept as the one frame of a `ThreadFrameStack`: no allocation. Markers keep a
/// reference to the one instance, so that the hot path reads no lazily initialised global.
final class SyncRecord: Sendable {
    /// One queue the code is inside, or a boundary.
    struct Entry {
        /// The queue's marker id; 0 for none.
        let queue: UInt
        /// The marker id Dispatch reported when the entry was made; 0 for none.
        let context: UInt
        /// Whether this is a boundary: the entries outwards are held by a thread that waits for this code.
        let isBoundary: Bool
        /// The next entry outwards.
        let outer: UnsafePointer<Entry>?
    }

    /// A thread's entries, from its innermost, as lent to the threads that work for it.
    // Safety: entries never change, and they stay valid while the thread that made them waits for the work it lent
    // them to; nothing else may hold a list.
    struct List: @unchecked Sendable {
        /// The innermost entry; nil for none.
        let innermost: UnsafePointer<Entry>?
    }

    /// Where the calling code is with respect to a queue.
    enum Place {
        /// Not inside it.
        case outside
        /// Inside it: a `sync` onto it runs inline.
        case inside
        /// Inside it only through the caller of `iterate`, which holds it and waits for this code.
        case heldByWaitingCaller
    }

    /// The one instance.
    static let shared = SyncRecord()

    /// Each thread's innermost entry, as the ``ThreadFrameStack/Frame/id`` of its top frame.
    private let innermostSlot = ThreadFrameStack()

    private init() {}

    /// The calling thread's list.
    var list: List {
        List(innermost: self.innermostSlot.topFrame.flatMap { UnsafePointer(bitPattern: $0.id) })
    }

    /// Where the code whose list is `list` is with respect to the queue whose marker id is `queue`.
    func place(of queue: UInt, in list: List) -> Place {
        var crossedBoundary = false
        var next = list.innermost
        while let entry = next?.pointee {
            if entry.isBoundary {
                crossedBoundary = true
            } else if entry.queue == queue {
                return crossedBoundary ? .heldByWaitingCaller : .inside
            }
            next = entry.outer
        }
        return .outside
    }

    /// The marker id of the queue of `list`'s innermost entry (0 for none), if that is the innermost queue now that
    /// Dispatch reports `context` (0 for none); else nil: then Dispatch's answer is the innermost queue.
    func innermostQueue(in list: List, context: UInt) -> UInt? {
        guard let entry = list.innermost?.pointee, !entry.isBoundary, entry.context == context else { return nil }
        return entry.queue
    }

    /// Runs `work` with the queue whose marker id is `queue` recorded as entered, in `context`.
    ///
    /// - Parameters:
    ///   - queue: The queue's marker id, or 0 for none.
    ///   - context: The marker id Dispatch reports now, or 0.
    ///   - list: The calling thread's ``list``, read by the caller.
    ///   - work: Gets the thread's list with the new entry.
    func entering(_ queue: UInt, context: UInt, within list: List, _ work: (List) -> Void) {
        withUnsafePointer(to: Entry(queue: queue, context: context, isBoundary: false, outer: list.innermost)) {
            entry in
            self.installing(entry) { work(List(innermost: entry)) }
        }
    }

    /// Runs `work`, on whatever thread runs it, as part of the code whose list is `list`: the block of a `sync` whose
    /// caller waits meanwhile.
    func acting(for list: List, _ work: () -> Void) {
        // Most `sync` blocks run on the waiting thread itself, whose list this already is.
        guard let innermost = list.innermost, self.list.innermost != innermost else { return work() }
        self.installing(innermost, work)
    }

    /// Runs `work` for the code whose list is `list`, which holds its queues and waits meanwhile, as one of several
    /// threads at once: behind a boundary.
    func working(for list: List, _ work: () -> Void) {
        withUnsafePointer(to: Entry(queue: 0, context: 0, isBoundary: true, outer: list.innermost)) { boundary in
            self.installing(boundary, work)
        }
    }

    /// Runs `work` with `innermost` as the calling thread's innermost entry.
    private func installing(_ innermost: UnsafePointer<Entry>, _ work: () -> Void) {
        self.innermostSlot.withFrame(id: UInt(bitPattern: innermost), on: self.innermostSlot.chain) { _ in work() }
    }
}
