#if DEBUG
/// One thread's side of the lock-order checker: the locks it holds, and the edges it already knows the graph has.
///
/// Only its own thread touches it, so it needs no lock. The edge cache makes the common case — a pair of locks this
/// thread has nested before — cost a few loads; only a pair new to the thread takes the graph's lock.
@usableFromInline
final class LockOrderThread {
    /// A lock the thread holds, retained so that a lock destroyed while held can still be named.
    struct Held {
        let node: Unmanaged<LockOrderNode>
        let site: LockOrderSite
    }

    private static let key = CLibrary.makeThreadKey(releasesObject: true)
    private static let cacheSlots = 256

    private var held: UnsafeMutablePointer<Held>
    private var capacity = 8
    @usableFromInline
    var heldCount = 0
    /// A direct-mapped set of edges (source serial, target serial) known to be in the graph or already reported.
    private let knownEdges: UnsafeMutablePointer<(UInt64, UInt64)>

    private init() {
        self.held = .allocate(capacity: self.capacity)
        self.knownEdges = .allocate(capacity: Self.cacheSlots)
        self.knownEdges.initialize(repeating: (0, 0), count: Self.cacheSlots)
    }

    deinit {
        for index in 0..<self.heldCount { self.held[index].node.release() }
        self.held.deinitialize(count: self.heldCount)
        self.held.deallocate()
        self.knownEdges.deallocate()
    }

    /// The calling thread's state, made on first use and released when the thread exits.
    @usableFromInline
    static var current: LockOrderThread {
        if let pointer = CLibrary.threadValue(Self.key) {
            return Unmanaged<LockOrderThread>.fromOpaque(pointer).takeUnretainedValue()
        }
        let state = LockOrderThread()
        CLibrary.setThreadValue(Self.key, Unmanaged.passRetained(state).toOpaque())
        return state
    }

    /// The calling thread's state if it has one.
    @usableFromInline
    static var existing: LockOrderThread? {
        CLibrary.threadValue(Self.key).map { Unmanaged<LockOrderThread>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Checks the edges from every held lock to `node`, adding new ones to the graph; reports what they close.
    @usableFromInline
    func checkEdges(to node: LockOrderNode, at site: LockOrderSite) {
        let serial = node.serial
        for index in 0..<self.heldCount {
            let entry = self.held[index]
            let heldNode = entry.node.takeUnretainedValue()
            let heldSerial = heldNode.serial
            if heldSerial == serial { continue }
            if let peers = node.peers, peers === heldNode.peers {
                self.reportPeers(peers, held: entry, acquiring: node, at: site)
            }
            let slot = Int(truncatingIfNeeded: (heldSerial &* 0x9E37_79B9_7F4A_7C15) ^ serial) & (Self.cacheSlots - 1)
            if self.knownEdges[slot] == (heldSerial, serial) { continue }
            if heldNode.retired.load(ordering: .relaxed) { continue }
            let report = LockOrderGraph.shared.addEdge(
                from: heldNode,
                heldAt: entry.site,
                to: node,
                acquiringAt: site
            )
            self.knownEdges[slot] = (heldSerial, serial)
            report?.emit()
        }
    }

    /// Records that the thread now holds `node`.
    @usableFromInline
    func push(_ node: LockOrderNode, at site: LockOrderSite) {
        if self.heldCount == self.capacity { self.grow() }
        (self.held + self.heldCount).initialize(to: Held(node: Unmanaged.passRetained(node), site: site))
        self.heldCount += 1
    }

    /// Records that the thread no longer holds `node`; locks may be released in any order.
    @usableFromInline
    func remove(_ node: LockOrderNode) {
        var index = self.heldCount - 1
        while index >= 0 {
            if self.held[index].node.toOpaque() == Unmanaged.passUnretained(node).toOpaque() {
                let entry = (self.held + index).move()
                (self.held + index).moveInitialize(from: self.held + index + 1, count: self.heldCount - index - 1)
                self.heldCount -= 1
                entry.node.release()
                return
            }
            index -= 1
        }
    }

    /// Whether the thread holds `node`.
    func holds(_ node: LockOrderNode) -> Bool {
        (0..<self.heldCount).contains { self.held[$0].node.toOpaque() == Unmanaged.passUnretained(node).toOpaque() }
    }

    private func grow() {
        let larger = UnsafeMutablePointer<Held>.allocate(capacity: self.capacity * 2)
        larger.moveInitialize(from: self.held, count: self.heldCount)
        self.held.deallocate()
        self.held = larger
        self.capacity *= 2
    }

    private func reportPeers(
        _ peers: LockOrderPeerClass,
        held: Held,
        acquiring node: LockOrderNode,
        at site: LockOrderSite
    ) {
        guard peers.isReported.raise() else { return }
        let heldNode = held.node.takeUnretainedValue()
        DiagnosticReport(
            kind: .unorderedPeers,
            resources: [heldNode.description, node.description],
            sites: [held.site.description, site.description],
            message: [
                "ConcurrencyKit: two \(peers.name)s held at once (possible deadlock).",
                "  Locks of this class have no order among themselves, so no thread may hold two of them.",
                "  This thread holds \(heldNode.description), taken at \(held.site),",
                "    and is acquiring \(node.description) at \(site).",
                "  Another thread nesting two of them the other way would wait for this one forever.",
                DiagnosticReport.switchHint,
            ].joined(separator: "\n")
        ).emit()
    }
}
#endif
