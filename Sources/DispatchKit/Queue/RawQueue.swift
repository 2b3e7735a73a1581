import Dispatch

#if canImport(CDispatch)
import CDispatch
#endif

/// A queue's `dispatch_queue_t`, on which `sync` calls `dispatch_sync_f` with the caller's closure as its context:
/// `DispatchQueue.sync` without the Swift overlay's block.
///
/// The overlay turns each closure it is given into a block, which it copies to the heap, retains and frees: about two
/// thirds of the samples of an uncontended `DispatchQueue.sync` in a profile (Linux, Swift 6.3.1). `dispatch_sync_f`
/// takes a function and a context pointer instead, and the closure stays on the caller's stack, where it may, since
/// `sync` waits for it. One allocation is left: the context `withoutActuallyEscaping` makes for the closure.
///
/// The overlay's `DispatchQueue` is a class whose one stored property, the `dispatch_queue_t`, follows the object
/// header. That layout is checked once, against the queue Dispatch reports from inside a private queue; if it does not
/// hold (another Dispatch, another platform), ``init(_:)`` returns nil and the caller goes through the overlay.
///
/// The pointer is not retained: whoever syncs through it holds the `DispatchQueue` meanwhile.
struct RawQueue: @unchecked Sendable {
    // Safety: a dispatch queue is thread-safe; the pointer is only passed to Dispatch.
    #if canImport(CDispatch)
    private let queue: dispatch_queue_t

    /// Where the overlay's `DispatchQueue` keeps its `dispatch_queue_t`: after the object header of two words.
    private static var queueOffset: Int { 2 * MemoryLayout<UInt>.size }

    /// Whether every `DispatchQueue` keeps its `dispatch_queue_t` at ``queueOffset``.
    private static let readsQueuesDirectly: Bool = {
        let probe = DispatchQueue(label: "DispatchKit.RawQueue.probe")
        let stored = Self.storedQueue(of: probe)
        return probe.sync { dispatch_get_current_queue() == stored }
    }()

    private static func storedQueue(of queue: DispatchQueue) -> dispatch_queue_t? {
        OpaquePointer(
            bitPattern: Unmanaged.passUnretained(queue).toOpaque().load(fromByteOffset: Self.queueOffset, as: UInt.self)
        )
    }
    #endif

    /// `queue`'s `dispatch_queue_t`, or nil where the overlay does not keep it as this type expects.
    init?(_ queue: DispatchQueue) {
        #if canImport(CDispatch)
        guard Self.readsQueuesDirectly, let stored = Self.storedQueue(of: queue) else { return nil }
        self.queue = stored
        #else
        return nil
        #endif
    }

    /// The closure `sync` runs, as its context.
    private struct Work {
        let run: () -> Void
    }

    /// Runs `work` on the queue, as a barrier or not, and waits for it: `DispatchQueue.sync(flags:execute:)`.
    func sync(barrier: Bool, _ work: () -> Void) {
        #if canImport(CDispatch)
        withoutActuallyEscaping(work) { work in
            // In a struct, not as a bare closure: a generic pointer to a closure would need a reabstraction thunk,
            // allocated on every call.
            withUnsafePointer(to: Work(run: work)) { context in
                let context = UnsafeMutableRawPointer(mutating: context)
                let run: dispatch_function_t = { $0.unsafelyUnwrapped.assumingMemoryBound(to: Work.self).pointee.run() }
                if barrier {
                    dispatch_barrier_sync_f(self.queue, context, run)
                } else {
                    dispatch_sync_f(self.queue, context, run)
                }
            }
        }
        #endif
    }
}
