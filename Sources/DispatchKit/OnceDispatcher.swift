import AtomicPrimitives
import Synchronization

/// Runs the first block handed to it exactly once, however many threads call it at the same time.
///
/// ```swift
/// import DispatchKit
///
/// let setUp = OnceDispatcher()
/// setUp { print("database open") }  // runs
/// setUp { print("database open") }  // does nothing
/// // Prints "database open"
/// ```
///
/// Callers that arrive while the first block runs return only after it has finished, so everyone may rely on its
/// effects. Calling the dispatcher from inside its own block traps instead of deadlocking.
public final class OnceDispatcher: Sendable {
    private let lock = MutexLock()
    private let hasRun = Atomic<Bool>(false)

    /// Creates a dispatcher that has not run anything yet.
    public init() {}

    /// Runs `block` if no block has run on this dispatcher yet; otherwise returns once the first run has finished.
    ///
    /// - Parameter block: The work; it runs on the calling thread.
    public func callAsFunction(_ block: () -> Void) {
        if self.hasRun.load(ordering: .acquiring) { return }
        if self.lock.isHeldByCurrentThread {
            halt("OnceDispatcher: called again from inside its own block, which would deadlock.")
        }
        self.lock.withLock {
            guard !self.hasRun.load(ordering: .relaxed) else { return }
            block()
            self.hasRun.store(true, ordering: .releasing)
        }
    }
}
