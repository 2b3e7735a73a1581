#if DEBUG
internal import ConcurrencyKitCShims

/// One thread's side of the lock-order checker: the locks it holds, and the orders it has already seen.
///
/// The records live in C (`ConcurrencyKitCShims`), in thread-local storage, because a debug build does not optimize
/// Swift and every acquisition of every observed lock reads them: there they cost a few dozen instructions and no
/// reference counting. Only their own thread touches them. An order the thread has seen before is checked there
/// without a lock; this type is the rest: an order new to the thread goes to the graph, and peer classes are checked.
@usableFromInline
enum LockOrderThread {
    /// Records that the calling thread is acquiring `key` at `site`, past the fast path: checks the orders from
    /// every lock it holds to `key`, reports a cycle or an unordered pair they close, and records `key` as held if
    /// `push`.
    @usableFromInline
    static func acquire(_ key: LockOrderKey, file: StaticString, line: UInt, epoch: UInt64, push: Bool) {
        let thread = ck_lock_order_current(epoch)
        LockOrderNode.dropOrphans(on: thread)
        if !ck_lock_order_all_known(thread, key.serial, key.peers) {
            Self.checkOrders(thread, to: key, at: LockOrderSite(file: file, line: line))
        }
        if push { Self.push(key, file: file, line: line, on: thread) }
    }

    /// Records that the thread of `thread`'s records now holds `key`, taken at `file`:`line`.
    @usableFromInline
    static func push(_ key: LockOrderKey, file: StaticString, line: UInt, on thread: OpaquePointer) {
        ck_lock_order_push(
            thread,
            key.serial,
            key.node.toOpaque(),
            key.peers,
            file.utf8Start,
            file.utf8CodeUnitCount,
            line
        )
    }

    /// Records that the calling thread no longer holds the lock with `serial`.
    @usableFromInline
    static func release(_ serial: UInt64) {
        ck_lock_order_release(serial)
    }

    /// Whether the calling thread holds the lock with `serial`.
    static func holds(_ serial: UInt64) -> Bool {
        ck_lock_order_holds(serial)
    }

    /// The orders from every held lock to `key` that the thread has not seen: each goes to the graph, which reports a
    /// cycle it closes; a held lock of `key`'s peer class is reported.
    private static func checkOrders(_ thread: OpaquePointer, to key: LockOrderKey, at site: LockOrderSite) {
        for index in 0..<ck_lock_order_count(thread) {
            let held = ck_lock_order_held_at(thread, index).pointee
            if held.serial == key.serial { continue }
            let heldNode = Unmanaged<LockOrderNode>.fromOpaque(held.node).takeUnretainedValue()
            let heldSite = LockOrderSite(file: held.file, fileCount: held.fileCount, line: held.line)
            if key.peers != nil && key.peers == held.peers {
                Self.reportPeers(held: heldNode, heldAt: heldSite, acquiring: key, at: site)
            }
            guard ck_lock_order_remember(thread, held.serial, key.serial) else { continue }
            let report = LockOrderGraph.shared.addEdge(
                from: heldNode,
                heldAt: heldSite,
                to: key.node.takeUnretainedValue(),
                acquiringAt: site
            )
            report?.emit()
        }
    }

    private static func reportPeers(
        held heldNode: LockOrderNode,
        heldAt heldSite: LockOrderSite,
        acquiring key: LockOrderKey,
        at site: LockOrderSite
    ) {
        let node = key.node.takeUnretainedValue()
        guard let peers = node.peers, peers.isReported.raise() else { return }
        DiagnosticReport(
            kind: .unorderedPeers,
            resources: [heldNode.description, node.description],
            sites: [heldSite.description, site.description],
            message: [
                "ConcurrencyKit: two \(peers.name)s held at once (possible deadlock).",
                "  Locks of this class have no order among themselves, so no thread may hold two of them.",
                "  This thread holds \(heldNode.description), taken at \(heldSite),",
                "    and is acquiring \(node.description) at \(site).",
                "  Another thread nesting two of them the other way would wait for this one forever.",
                DiagnosticReport.switchHint,
            ].joined(separator: "\n")
        ).emit()
    }
}
#endif
