import Synchronization

/// A flag that can be raised once, from any thread: for "report this only once".
final class AtomicFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    /// Raises the flag; `true` for the one caller that raised it.
    func raise() -> Bool {
        !self.raised.exchange(true, ordering: .relaxed)
    }
}
