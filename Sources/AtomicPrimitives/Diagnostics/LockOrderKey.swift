#if DEBUG
/// What the per-acquisition path of the lock-order checker needs of a resource, as plain values: no reference
/// counting on the way, which dominates the cost in unoptimized builds.
// Safety: every field is immutable; the node is a Sendable object kept alive by whoever made the key.
@usableFromInline
struct LockOrderKey: @unchecked Sendable {
    /// The node's serial number.
    @usableFromInline
    let serial: UInt64
    /// The node's peer class, by address; `nil` if it has none.
    let peers: UnsafeRawPointer?
    /// The node itself, unretained: whoever made the key keeps it alive while it is in use.
    let node: Unmanaged<LockOrderNode>

    /// The key of the diagnostics' own locks, which stay outside the graph: serial 0.
    static let unobserved = LockOrderKey(LockOrderNode.unobserved)

    @usableFromInline
    init(_ node: LockOrderNode) {
        self.serial = node.serial
        self.peers = node.peers.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
        self.node = Unmanaged.passUnretained(node)
    }
}
#endif
