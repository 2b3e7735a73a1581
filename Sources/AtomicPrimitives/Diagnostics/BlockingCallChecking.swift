import Synchronization

/// The switch of the blocking-call check, in debug builds: what a report of a blocking call made from inside a Swift
/// concurrency task does.
///
/// A task that blocks its thread (a semaphore's blocking wait, a `wait` command of a value, a `GCDQueue.sync` that has
/// to wait) holds one of the cooperative pool's few threads. The check reports such a call where its thread parks,
/// once per call site, and names the `async` form to use instead (see <doc:FindingDeadlocks>).
///
/// Until it is set on its own, the check follows the lock-order checker's switch, ``LockOrderChecking/mode``, which
/// governed both checks before this switch existed: `CONCURRENCYKIT_LOCK_ORDER=trap` still makes both trap.
///
/// ```swift
/// import AtomicPrimitives
///
/// BlockingCallChecking.mode = .trap  // stop at the first blocking call made from inside a task
/// print(BlockingCallChecking.mode)  // trap
/// ```
///
/// The environment variable `CONCURRENCYKIT_BLOCKING_CHECK` (`warn`, `trap` or `off`) sets the mode when the process
/// starts. In release builds the check is compiled out: ``mode`` is always ``LockOrderChecking/Mode/off``.
public enum BlockingCallChecking {
    /// The name of the environment variable that sets the starting ``mode``.
    public static let environmentVariable = "CONCURRENCYKIT_BLOCKING_CHECK"

    /// What a report of a blocking call made from inside a task does: ``LockOrderChecking/mode`` unless set here or
    /// by `CONCURRENCYKIT_BLOCKING_CHECK`.
    ///
    /// Set it from any thread; calls that park afterwards see the new mode. In a release build of ConcurrencyKit it is
    /// always ``LockOrderChecking/Mode/off`` and setting it has no effect.
    public static var mode: LockOrderChecking.Mode {
        get {
            #if DEBUG
            switch Self.state.load(ordering: .relaxed) {
            case LockOrderChecking.Mode.warn.code: .warn
            case LockOrderChecking.Mode.trap.code: .trap
            case LockOrderChecking.Mode.off.code: .off
            default: LockOrderChecking.mode
            }
            #else
            .off
            #endif
        }
        set {
            #if DEBUG
            Self.state.store(newValue.code, ordering: .relaxed)
            #endif
        }
    }

    #if DEBUG
    /// The mode as a number, as ``LockOrderChecking`` keeps its own, or ``followsLockOrder``.
    private static let state = Atomic<UInt8>(Self.modeFromEnvironment()?.code ?? Self.followsLockOrder)

    /// The state of a switch that was never set on its own: it follows ``LockOrderChecking/mode``.
    private static let followsLockOrder: UInt8 = 255

    /// Reads `CONCURRENCYKIT_BLOCKING_CHECK` again: for tests that run in a process of their own and change it.
    package static func reloadModeFromEnvironment() {
        Self.state.store(Self.modeFromEnvironment()?.code ?? Self.followsLockOrder, ordering: .relaxed)
    }

    private static func modeFromEnvironment() -> LockOrderChecking.Mode? {
        guard let text = CLibrary.environmentValue(Self.environmentVariable) else { return nil }
        guard let mode = LockOrderChecking.Mode(environmentValue: text) else {
            CLibrary.writeLineToStandardError(
                "ConcurrencyKit: \(Self.environmentVariable)=\(text) is not one of warn, trap, off; "
                    + "following \(LockOrderChecking.environmentVariable)."
            )
            return nil
        }
        return mode
    }
    #endif
}
