import AtomicPrimitives
import Dispatch

/// A ``GCDTimer``'s start and cancel handlers, in a box of their own that the dispatch source's registration and
/// cancel handlers hold: the source runs them even while the timer is being released.
final class TimerLifecycleHandlers: @unchecked Sendable {
    // Safety: `start` and `cancel` are read and written under `lock` only.
    private let lock = MutexLock()
    private var startBlock: (@Sendable () -> Void)?
    private var cancelBlock: (@Sendable () -> Void)?

    /// What runs when the source is first resumed.
    var start: (@Sendable () -> Void)? {
        get { self.lock.withLock { self.startBlock } }
        set { self.lock.withLock { self.startBlock = newValue } }
    }

    /// What runs once the source has been cancelled.
    var cancel: (@Sendable () -> Void)? {
        get { self.lock.withLock { self.cancelBlock } }
        set { self.lock.withLock { self.cancelBlock = newValue } }
    }

    /// Makes `source` run these handlers; call before the source is first resumed.
    func install(on source: any DispatchSourceTimer) {
        source.setRegistrationHandler { self.start?() }
        source.setCancelHandler { self.cancel?() }
    }
}
