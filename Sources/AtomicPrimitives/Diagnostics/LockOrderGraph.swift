#if DEBUG
/// The process's lock-order graph: an edge A → B says some thread acquired B while it held A.
///
/// It stays acyclic: an acquisition whose edge would close a cycle is reported (once per pair of locks) and its edge
/// is not added. Nodes are lock instances (as Abseil's deadlock detector keeps them), added with their first edge and
/// removed when their lock is destroyed. The graph's own lock is outside the graph.
final class LockOrderGraph: @unchecked Sendable {
    static let shared = LockOrderGraph()

    private struct Edge {
        /// Where the source lock was taken.
        let heldAt: LockOrderSite
        /// Where the target lock was acquired while the source was held.
        let acquiredAt: LockOrderSite
    }

    private struct Node {
        let description: String
        let shortName: String
        var successors: [UInt64: Edge] = [:]
        var predecessors: Set<UInt64> = []
    }

    private struct Pair: Hashable {
        let low: UInt64
        let high: UInt64

        init(_ first: UInt64, _ second: UInt64) {
            self.low = min(first, second)
            self.high = max(first, second)
        }
    }

    private let lock = LockCore(unobserved: ())
    // Safety: `nodes` and `reported` are only read or written while `lock` is locked.
    private var nodes: [UInt64: Node] = [:]
    private var reported: Set<Pair> = []

    /// Whether the lock with this serial number is in the graph.
    func contains(_ serial: UInt64) -> Bool {
        self.lock.lock(file: "", line: 0, onReentry: { Self.trapReentry() })
        defer { self.lock.unlock() }
        return self.nodes[serial] != nil
    }

    /// Adds `held → acquiring` unless it would close a cycle; returns the report of a cycle seen for the first time.
    func addEdge(
        from held: LockOrderNode,
        heldAt: LockOrderSite,
        to acquiring: LockOrderNode,
        acquiringAt: LockOrderSite
    ) -> DiagnosticReport? {
        self.lock.lock(file: "", line: 0, onReentry: { Self.trapReentry() })
        defer { self.lock.unlock() }
        if self.nodes[held.serial]?.successors[acquiring.serial] != nil { return nil }
        if let path = self.path(from: acquiring.serial, to: held.serial) {
            guard self.reported.insert(Pair(held.serial, acquiring.serial)).inserted else { return nil }
            return self.cycleReport(
                held: held,
                heldAt: heldAt,
                acquiring: acquiring,
                acquiringAt: acquiringAt,
                earlier: path
            )
        }
        for node in [held, acquiring] {
            node.joined.store(true, ordering: .sequentiallyConsistent)
        }
        // A lock destroyed meanwhile gets no edge and must not stay in the graph: its `retire` may have run before
        // `joined` was set, and then did not look.
        let retired = [held, acquiring].filter { $0.retired.load(ordering: .sequentiallyConsistent) }
        guard retired.isEmpty else {
            for node in retired { self.removeLocked(node.serial) }
            return nil
        }
        for node in [held, acquiring] where self.nodes[node.serial] == nil {
            self.nodes[node.serial] = Node(description: node.description, shortName: node.shortName)
        }
        self.nodes[held.serial]!.successors[acquiring.serial] = Edge(heldAt: heldAt, acquiredAt: acquiringAt)
        self.nodes[acquiring.serial]!.predecessors.insert(held.serial)
        return nil
    }

    /// Removes a destroyed lock and its edges.
    func remove(_ serial: UInt64) {
        self.lock.lock(file: "", line: 0, onReentry: { Self.trapReentry() })
        defer { self.lock.unlock() }
        self.removeLocked(serial)
    }

    private func removeLocked(_ serial: UInt64) {
        guard let node = self.nodes.removeValue(forKey: serial) else { return }
        for successor in node.successors.keys {
            self.nodes[successor]?.predecessors.remove(serial)
        }
        for predecessor in node.predecessors {
            self.nodes[predecessor]?.successors.removeValue(forKey: serial)
        }
    }

    /// The edges of a path `start` →* `goal`, by depth-first search, or `nil`.
    private func path(from start: UInt64, to goal: UInt64) -> [(from: UInt64, to: UInt64)]? {
        guard self.nodes[start] != nil, self.nodes[goal] != nil else { return nil }
        var parent: [UInt64: UInt64] = [start: start]
        var stack = [start]
        while let current = stack.popLast() {
            if current == goal {
                var edges: [(from: UInt64, to: UInt64)] = []
                var node = goal
                while node != start {
                    let previous = parent[node]!
                    edges.append((previous, node))
                    node = previous
                }
                return edges.reversed()
            }
            guard let successors = self.nodes[current]?.successors else { continue }
            for next in successors.keys where parent[next] == nil {
                parent[next] = current
                stack.append(next)
            }
        }
        return nil
    }

    private func cycleReport(
        held: LockOrderNode,
        heldAt: LockOrderSite,
        acquiring: LockOrderNode,
        acquiringAt: LockOrderSite,
        earlier path: [(from: UInt64, to: UInt64)]
    ) -> DiagnosticReport {
        let both = path.count == 1
        var lines = [
            both
                ? "ConcurrencyKit: lock-order inversion: \(held.shortName) and \(acquiring.shortName) are taken in "
                    + "both orders (possible deadlock)."
                : "ConcurrencyKit: lock-order cycle of \(path.count + 1) locks: \(held.shortName) and "
                    + "\(acquiring.shortName) close it (possible deadlock).",
            "  This thread holds \(held.description), taken at \(heldAt),",
            "    and is acquiring \(acquiring.description) at \(acquiringAt).",
        ]
        var sites = [heldAt.description, acquiringAt.description]
        for (index, step) in path.enumerated() {
            let edge = self.nodes[step.from]!.successors[step.to]!
            let from = self.nodes[step.from]!
            let to = self.nodes[step.to]!
            let lead = index == 0 ? "  Earlier, a thread held" : "  Then a thread held"
            lines.append("\(lead) \(both ? from.shortName : from.description), taken at \(edge.heldAt),")
            lines.append("    and acquired \(both ? to.shortName : to.description) at \(edge.acquiredAt).")
            sites += [edge.heldAt.description, edge.acquiredAt.description]
        }
        lines.append(
            both
                ? "  Two threads doing these at the same time would each wait for the other forever. "
                    + "Take the two locks in one order everywhere."
                : "  Threads doing these at the same time would wait for each other in a circle forever. "
                    + "Take the locks in one order everywhere."
        )
        lines.append(DiagnosticReport.switchHint)
        return DiagnosticReport(
            kind: .lockOrderCycle,
            resources: [held.description, acquiring.description],
            sites: sites,
            message: lines.joined(separator: "\n")
        )
    }

    private static func trapReentry() -> Never {
        halt("LockOrderGraph: internal lock re-entered; this is a bug in ConcurrencyKit.")
    }
}
#endif
