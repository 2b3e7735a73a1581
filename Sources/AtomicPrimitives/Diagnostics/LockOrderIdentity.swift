/// One lock-like resource in the lock-order graph: a lock, a value's turn, a queue that `sync` waits for.
///
/// Types built on ``LockCore`` join the graph by themselves. Anything else that blocks a thread until it owns
/// something — a `QueueSafeValue`'s `wait` turn, `GCDQueue.sync` — makes one identity when it is created, keeps it as
/// long as it lives, and reports its acquisitions through ``LockOrderChecker``. The graph forgets the resource when
/// the last copy of its identity is released, so a new resource at the same address starts with no history.
///
/// Keep the identity alive while a thread holds the resource: call ``LockOrderChecker/didRelease(_:)`` before the
/// last copy goes. In release builds the identity is empty and every call on it compiles to nothing.
@usableFromInline
package struct LockOrderIdentity: Sendable {
    #if DEBUG
    @usableFromInline
    let node: LockOrderNode
    @usableFromInline
    let key: LockOrderKey
    #endif

    /// Makes the identity of a new resource.
    ///
    /// - Parameters:
    ///   - name: What reports call it; when `nil`, the type and the creation site.
    ///   - type: The type of the resource, for reports.
    ///   - peers: The class of resources that have no order among themselves: holding two of them at once is
    ///     reported, even when no other thread ever takes them the other way.
    ///   - file: The file that creates the resource.
    ///   - line: The line that creates the resource.
    @inlinable
    package init(
        name: String? = nil,
        type: Any.Type,
        peers: LockOrderPeerClass? = nil,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        #if DEBUG
        self.node = LockOrderNode(name: name, type: type, peers: peers, file: file, line: line)
        self.key = LockOrderKey(self.node)
        #endif
    }

    /// A number no other resource of the process has (0 in release builds): for tests that look the resource up in
    /// the graph with ``LockOrderChecker/graphContains(serial:)``.
    package var serial: UInt64 {
        #if DEBUG
        self.node.serial
        #else
        0
        #endif
    }

    /// Takes the resource out of the graph now, before its identity is released: for a resource that is destroyed
    /// while a thread may still hold it.
    @inlinable
    package func retire() {
        #if DEBUG
        self.node.retire()
        #endif
    }
}

/// A class of resources that the package takes one at a time and never nests, such as subscribers' delivery locks.
///
/// The lock-order graph sees instances. Two delivery locks nested in one callback chain and the reverse nesting in
/// another callback chain form a cycle only if the same two instances meet; the rule "never hold two of this class"
/// (Linux lockdep's lock classes) catches the nesting the first time it happens, whatever the instances.
@usableFromInline
package final class LockOrderPeerClass: Sendable {
    /// What reports call the class.
    package let name: String

    #if DEBUG
    let isReported = AtomicFlag()
    #endif

    /// Makes a class; keep it in a `static let` and pass it to every lock of the class.
    ///
    /// - Parameter name: What reports call the class, such as `"subscriber delivery lock"`.
    package init(name: String) {
        self.name = name
    }
}
