import AtomicPrimitives
import Foundation

/// An operation that does no work: it finishes once every operation it waits for has, and keeps the operations that
/// depend on it alive until its finish has been processed.
///
/// ``Queuer`` puts one between an operation and what must follow it, for two reasons:
/// - A cancelled operation is ready at once, whatever it depends on. An operation that must wait for several
///   others (a chain link for every earlier link, a completion handler for every operation before it) waits for a
///   gate, which nobody can cancel, so that cancelling one of them cannot let it start early.
/// - Foundation on Linux records an operation's dependents by unretained pointer and never removes one: a dependent
///   that was cancelled, finished early and was released leaves a dangling pointer, which the dependency follows
///   when it finishes (SIGSEGV in `Operation.observeValue`). The gate keeps such dependents until its own finish
///   has been processed, and lets them go then, so no cycle remains.
///
/// Gates run on a private queue that no ``Queuer/cancelAll()`` and no pause reaches; ``cancel()`` does nothing.
final class DependencyGate: Operation, @unchecked Sendable {
    // Safety: `dependents` and `finished` are only touched under `lock`.
    private let lock = MutexLock()
    private var dependents: [Operation] = []
    private var finished = false

    /// Creates a gate that finishes once every one of `operations` has finished.
    init(after operations: [Operation]) {
        super.init()
        self.name = "Queuer dependency gate"
        for operation in operations { self.addDependency(operation) }
    }

    /// Keeps `operation` alive until the gate has finished.
    ///
    /// Use it for an operation that depends on the gate, and on nothing the gate waits for: Foundation walks an
    /// operation's dependents while it finishes, and the gate may finish (through another of its dependencies)
    /// while one of those still walks. Call it before the gate is queued: a gate that had finished would keep
    /// `operation` for good.
    func keep(_ operation: Operation) {
        self.lock.withLock { self.dependents.append(operation) }
    }

    /// Always `true`: the gate finishes inside ``start()``, under its own notifications.
    override var isAsynchronous: Bool { true }

    /// Always `false`: the gate has no work to run.
    override var isExecuting: Bool { false }

    /// Whether the gate has finished.
    override var isFinished: Bool { self.lock.withLock { self.finished } }

    /// Does nothing: a gate stands for the order of other operations, not for work that could be dropped.
    override func cancel() {}

    /// Finishes the gate, then lets its dependents go.
    override func start() {
        self.willChangeValue(forKey: "isFinished")
        self.lock.withLock { self.finished = true }
        // Foundation wakes the dependents and forgets them while it handles this notification.
        self.didChangeValue(forKey: "isFinished")
        let released = self.lock.withLock { () -> [Operation] in
            defer { self.dependents = [] }
            return self.dependents
        }
        withExtendedLifetime(released) {}  // released here, outside the lock
    }
}
