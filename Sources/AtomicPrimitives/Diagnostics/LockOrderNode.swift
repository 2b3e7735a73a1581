#if DEBUG
internal import ConcurrencyKitCShims
import Synchronization

/// The debug-build record of one resource in the lock-order graph: its serial number and how reports describe it.
///
/// Serial numbers are never reused, so the graph and the per-thread caches cannot mistake a new lock for a destroyed
/// one at the same address.
@usableFromInline
final class LockOrderNode: Sendable {
    /// A number no other node of this process has, never 0.
    let serial: UInt64
    let name: String?
    let type: Any.Type
    let peers: LockOrderPeerClass?
    let file: StaticString
    let line: UInt
    /// Set under the graph's lock when the node gets its first edge.
    let joined = Atomic<Bool>(false)
    /// Set when the resource is destroyed; a retired node gets no more edges.
    let retired = Atomic<Bool>(false)

    private static let serials = Atomic<UInt64>(0)

    /// The node of the diagnostics' own locks: serial 0, never in the graph.
    static let unobserved = LockOrderNode()

    private init() {
        self.serial = 0
        self.name = "unobserved"
        self.type = InternalLock.self
        self.peers = nil
        self.file = #fileID
        self.line = #line
    }

    @usableFromInline
    init(name: String?, type: Any.Type, peers: LockOrderPeerClass?, file: StaticString, line: UInt) {
        self.serial = Self.serials.wrappingAdd(1, ordering: .relaxed).newValue
        self.name = name
        self.type = type
        self.peers = peers
        self.file = file
        self.line = line
    }

    deinit {
        self.retire()
    }

    /// Nodes of locks destroyed while another thread held them (orphans), by holder: that thread's records still
    /// point at them, and do not retain them.
    ///
    /// A holder drops its orphans from its records, and so from here, the next time it acquires a lock the checker
    /// sees: the orphans' count sends it to the slow path, ``dropOrphans(on:)``. A thread that exits holding orphans
    /// leaves them to the next thread given its ID (the C library reuses them), which looks at its first acquisition.
    /// So this holds the orphans of threads that have not acquired a lock since, not every orphan ever made.
    private static let keptForHolders = AtomicBox<[UInt: [LockOrderNode]]>([:], unobserved: ())

    /// Retires the node of a destroyed ``LockCore`` and gives up the lock's reference to it.
    ///
    /// - Parameters:
    ///   - node: The lock's node, retained by the lock.
    ///   - holder: The thread that holds the lock as it is destroyed (releasing a held lock is allowed), or 0.
    static func lockDestroyed(_ node: Unmanaged<LockOrderNode>, holder: UInt) {
        let retained = node.takeRetainedValue()
        retained.retire()
        if holder == currentThreadID() {
            LockOrderChecker.didRelease(retained.serial)
        } else if holder != 0 && DiagnosticSwitches.flags.load(ordering: .relaxed) & ~DiagnosticSwitches.chaos != 0 {
            // The checker is on or was once: the holder may have recorded the lock. (Never on, no thread has
            // records, and the node can go now.)
            Self.keptForHolders.mutate { $0[holder, default: []].append(retained) }
            // Counted after it is kept: a holder that sees the count looks for it, and finds it.
            ck_lock_order_orphaned()
        }
    }

    /// Drops the calling thread's orphans from its records, `thread`, and frees them, if one was made since it last
    /// looked: before the thread reads a node of its records.
    static func dropOrphans(on thread: OpaquePointer) {
        guard !ck_lock_order_orphans_seen(thread) else { return }
        let holder = currentThreadID()
        for orphan in Self.keptForHolders.mutate({ $0.removeValue(forKey: holder) }) ?? [] {
            ck_lock_order_release(orphan.serial)
        }
    }

    /// How many nodes are kept for threads that held their locks as they were destroyed: for tests that check the
    /// checker's memory stays flat.
    static var orphanCount: Int {
        Self.keptForHolders.value.values.reduce(0) { $0 + $1.count }
    }

    /// Takes the node out of the graph, once.
    @usableFromInline
    func retire() {
        guard !self.retired.exchange(true, ordering: .sequentiallyConsistent) else { return }
        if self.joined.load(ordering: .sequentiallyConsistent) {
            LockOrderGraph.shared.remove(self.serial)
        }
    }

    /// How reports name the resource: `"cache" (MutexLock made at Module/File.swift:12)`.
    var description: String {
        let made = "\(self.type) made at \(self.file):\(self.line)"
        guard let name else { return made }
        return "\"\(name)\" (\(made))"
    }

    /// The short name for a report's first line.
    var shortName: String {
        self.name.map { "\"\($0)\"" } ?? "\(self.type) (\(self.file):\(self.line))"
    }
}
#endif
