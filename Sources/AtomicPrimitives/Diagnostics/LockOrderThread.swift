#if DEBUG
/// One thread's side of the lock-order checker: the locks it holds, and the edges it already knows the graph has.
///
/// Only its own thread touches it, so it needs no lock. It lives in raw memory found through a thread-specific key,
/// so that the per-acquisition path does no reference counting; an owner object, kept under a second key, frees it
/// when the thread exits. The edge cache makes the common case — a pair of locks this thread has nested before —
/// cost a few loads; only a pair new to the thread takes the graph's lock.
@usableFromInline
struct LockOrderThread {
    /// A lock the thread holds.
    struct Held {
        let key: LockOrderKey
        let site: LockOrderSite
    }

    private final class Owner {
        let record: UnsafeMutablePointer<LockOrderThread>

        init(_ record: UnsafeMutablePointer<LockOrderThread>) {
            self.record = record
        }

        deinit {
            self.record.pointee.held.deallocate()
            self.record.pointee.heldSerials.deallocate()
            self.record.pointee.knownEdges.deallocate()
            self.record.deinitialize(count: 1)
            self.record.deallocate()
        }
    }

    private static let ownerKey = CLibrary.makeThreadKey(releasesObject: true)
    private static let recordKey = CLibrary.makeThreadKey(releasesObject: false)
    /// The edge cache's size: the mask in ``checkEdges(to:at:)`` is this minus one.
    private static let cacheSlots = 256

    private var held: UnsafeMutablePointer<Held>
    /// The serial numbers of `held`, apart: the per-acquisition scans read only these, not whole entries, which an
    /// unoptimized build would copy.
    private var heldSerials: UnsafeMutablePointer<UInt64>
    private var capacity = 8
    @usableFromInline
    var heldCount = 0
    /// The epoch bits of ``DiagnosticSwitches/flags`` when the records were last valid.
    private var epoch: UInt64
    /// An edge by serial numbers: a struct, not a tuple, whose comparison would need tuple metadata unoptimized.
    private struct Edge {
        var from: UInt64
        var to: UInt64
    }

    /// A direct-mapped set of edges known to be in the graph or already reported.
    private let knownEdges: UnsafeMutablePointer<Edge>

    private init(epoch: UInt64) {
        self.epoch = epoch
        self.held = .allocate(capacity: self.capacity)
        self.heldSerials = .allocate(capacity: self.capacity)
        self.knownEdges = .allocate(capacity: Self.cacheSlots)
        self.knownEdges.initialize(repeating: Edge(from: 0, to: 0), count: Self.cacheSlots)
    }

    /// The calling thread's record, made on first use and freed when the thread exits; emptied if the checker was
    /// off since the thread last used it.
    @usableFromInline
    static var current: UnsafeMutablePointer<LockOrderThread> {
        self.current(switches: DiagnosticSwitches.flags.load(ordering: .relaxed))
    }

    /// ``current``, given a value of ``DiagnosticSwitches/flags`` read just before.
    @usableFromInline
    static func current(switches: UInt64) -> UnsafeMutablePointer<LockOrderThread> {
        let epoch = switches >> 2
        if let pointer = CLibrary.threadValue(Self.recordKey) {
            let record = pointer.assumingMemoryBound(to: LockOrderThread.self)
            if record.pointee.epoch != epoch {
                // The checker was off meanwhile, and saw no releases: forget what the thread held.
                record.pointee.heldCount = 0
                record.pointee.epoch = epoch
            }
            return record
        }
        let record = UnsafeMutablePointer<LockOrderThread>.allocate(capacity: 1)
        record.initialize(to: LockOrderThread(epoch: epoch))
        CLibrary.setThreadValue(Self.ownerKey, Unmanaged.passRetained(Owner(record)).toOpaque())
        CLibrary.setThreadValue(Self.recordKey, record)
        return record
    }

    /// The calling thread's record if it has one.
    @usableFromInline
    static var existing: UnsafeMutablePointer<LockOrderThread>? {
        CLibrary.threadValue(Self.recordKey)?.assumingMemoryBound(to: LockOrderThread.self)
    }

    /// Checks the edges from every held lock to `key`, adding new ones to the graph; reports what they close.
    @usableFromInline
    mutating func checkEdges(to key: LockOrderKey, at site: LockOrderSite) {
        var index = 0
        while index < self.heldCount {
            let serial = self.heldSerials[index]
            index += 1
            if serial == key.serial { continue }
            if key.peers != nil && key.peers == self.held[index - 1].key.peers {
                Self.reportPeers(held: self.held[index - 1], acquiring: key, at: site)
            }
            let slot = self.knownEdges + Int(truncatingIfNeeded: ((serial &* 0x9E37_79B9_7F4A_7C15) ^ key.serial) & 255)
            if slot.pointee.from == serial && slot.pointee.to == key.serial { continue }
            slot.pointee = Edge(from: serial, to: key.serial)
            let entry = self.held[index - 1]
            let report = entry.key.node._withUnsafeGuaranteedRef { heldNode in
                key.node._withUnsafeGuaranteedRef { node in
                    LockOrderGraph.shared.addEdge(from: heldNode, heldAt: entry.site, to: node, acquiringAt: site)
                }
            }
            report?.emit()
        }
    }

    /// Records that the thread now holds `key`.
    @usableFromInline
    mutating func push(_ key: LockOrderKey, file: StaticString, line: UInt) {
        if self.heldCount == self.capacity { self.grow() }
        (self.held + self.heldCount).initialize(to: Held(key: key, site: LockOrderSite(file: file, line: line)))
        self.heldSerials[self.heldCount] = key.serial
        self.heldCount += 1
    }

    /// Records that the thread no longer holds the lock with `serial`; locks may be released in any order.
    @usableFromInline
    mutating func remove(_ serial: UInt64) {
        let count = self.heldCount
        if count > 0 && self.heldSerials[count - 1] == serial {
            self.heldCount = count - 1
            return
        }
        var index = count - 1
        while index >= 0 {
            if self.heldSerials[index] == serial {
                (self.held + index).moveUpdate(from: self.held + index + 1, count: count - index - 1)
                (self.heldSerials + index).update(from: self.heldSerials + index + 1, count: count - index - 1)
                self.heldCount -= 1
                return
            }
            index -= 1
        }
    }

    /// Whether the thread holds the lock with `serial`.
    func holds(_ serial: UInt64) -> Bool {
        (0..<self.heldCount).contains { self.heldSerials[$0] == serial }
    }

    private mutating func grow() {
        let larger = UnsafeMutablePointer<Held>.allocate(capacity: self.capacity * 2)
        larger.moveInitialize(from: self.held, count: self.heldCount)
        self.held.deallocate()
        self.held = larger
        let largerSerials = UnsafeMutablePointer<UInt64>.allocate(capacity: self.capacity * 2)
        largerSerials.update(from: self.heldSerials, count: self.heldCount)
        self.heldSerials.deallocate()
        self.heldSerials = largerSerials
        self.capacity *= 2
    }

    private static func reportPeers(held: Held, acquiring key: LockOrderKey, at site: LockOrderSite) {
        let heldNode = held.key.node.takeUnretainedValue()
        let node = key.node.takeUnretainedValue()
        guard let peers = node.peers, peers.isReported.raise() else { return }
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
