import Dispatch
import Synchronization

/// The ordering rule of ``CallbackQueue/mainCurrentOrAsync``: count the blocks it sent to main that have not
/// started, and run inline only on main and only while that count is zero.
enum MainQueueHops {
    /// How many blocks sent by `mainCurrentOrAsync` wait on main and have not started.
    ///
    /// Incremented before a hop and decremented as the hopped block starts, so a block already running does not
    /// count.
    private static let waiting = Atomic<Int>(0)

    static func runInlineOrHop(_ block: @escaping @Sendable () -> Void) {
        if MainQueue.isCurrent && self.waiting.load(ordering: .acquiring) == 0 {
            block()
            return
        }
        self.waiting.add(1, ordering: .releasing)
        DispatchQueue.main.async {
            self.waiting.subtract(1, ordering: .acquiringAndReleasing)
            block()
        }
        MainQueueDoctor.noteSendToMain()
    }
}
