import Synchronization

/// Finds possible deadlocks in debug builds: locks taken in an order that some other code reverses.
///
/// In a debug build of ConcurrencyKit, every ``MutexLock``, ``AtomicBox`` and ``Locked`` property, and the package's
/// own internal locks, join one lock-order graph. When a thread that holds lock A starts to acquire lock B, the
/// checker records "A before B". If the graph already says B comes before A — on any thread, at any earlier time —
/// two threads could each hold one lock and wait for the other forever. The checker reports that pair once, naming
/// both locks and the source lines of both orders, *before* the acquisition blocks: it finds the deadlock in a run
/// where it does not happen.
///
/// Give locks names to make reports easy to read: `MutexLock(name: "cache")`, `AtomicBox(0, name: "hits")`,
/// `@Locked(name: "state") var state = State()`. Without one, a lock is named by its type and the line that made it.
///
/// Until ``BlockingCallChecking/mode`` is set on its own, this switch also governs the check for blocking calls made
/// from inside a Swift concurrency task.
///
/// ```swift
/// import AtomicPrimitives
///
/// LockOrderChecking.mode = .trap  // stop at the first report, in the debugger
/// LockOrderChecking.mode = .off
/// LockOrderChecking.mode = .warn  // the debug default: one report on standard error
/// print(LockOrderChecking.mode)  // warn
/// ```
///
/// The environment variable `CONCURRENCYKIT_LOCK_ORDER` (`warn`, `trap` or `off`) sets the mode when the process
/// starts. In release builds of ConcurrencyKit the checker is compiled out: ``mode`` is always ``Mode/off`` and
/// locking costs exactly what it costs without it.
public enum LockOrderChecking {
    /// What the checker does when it finds a possible deadlock.
    public enum Mode: String, Sendable, CaseIterable {
        /// Write one report per problem to standard error and carry on. The default in debug builds.
        case warn
        /// Write the report and stop the process, so that a test run or a debugger stops at the cause.
        case trap
        /// Check nothing. Locking then costs one extra branch in a debug build.
        case off

        /// The mode named by a value of `CONCURRENCYKIT_LOCK_ORDER`, ignoring case; `nil` for other text.
        ///
        /// - Parameter environmentValue: The variable's text, such as `"trap"`.
        public init?(environmentValue: String) {
            self.init(rawValue: environmentValue.lowercased())
        }
    }

    /// The name of the environment variable that sets the starting ``mode``.
    public static let environmentVariable = "CONCURRENCYKIT_LOCK_ORDER"

    /// What the checker does on a report; ``Mode/warn`` unless `CONCURRENCYKIT_LOCK_ORDER` says otherwise.
    ///
    /// Set it from any thread; acquisitions that start afterwards see the new mode. In a release build of
    /// ConcurrencyKit it is always ``Mode/off`` and setting it has no effect.
    public static var mode: Mode {
        get {
            #if DEBUG
            Self.storedMode
            #else
            .off
            #endif
        }
        set {
            #if DEBUG
            self.state.store(newValue.code, ordering: .relaxed)
            DiagnosticSwitches.set(DiagnosticSwitches.lockOrder, newValue != .off)
            #endif
        }
    }

    #if DEBUG
    /// The mode as a number: 0 warn, 1 trap, 2 off.
    ///
    /// Acquisitions read ``DiagnosticSwitches`` instead.
    static let state = Atomic<UInt8>(Self.modeFromEnvironment().code)

    @usableFromInline
    static var isOn: Bool {
        DiagnosticSwitches.flags.load(ordering: .relaxed) & 1 != 0
    }

    static var storedMode: Mode {
        switch self.state.load(ordering: .relaxed) {
        case Mode.warn.code: .warn
        case Mode.trap.code: .trap
        default: .off
        }
    }

    /// Reads `CONCURRENCYKIT_LOCK_ORDER` again and sets the mode from it: for tests that run in a process of their
    /// own and change the variable.
    package static func reloadModeFromEnvironment() {
        self.mode = self.modeFromEnvironment()
    }

    private static func modeFromEnvironment() -> Mode {
        guard let text = CLibrary.environmentValue(Self.environmentVariable) else { return .warn }
        guard let mode = Mode(environmentValue: text) else {
            CLibrary.writeLineToStandardError(
                "ConcurrencyKit: \(Self.environmentVariable)=\(text) is not one of warn, trap, off; using warn."
            )
            return .warn
        }
        return mode
    }
    #endif
}

extension LockOrderChecking.Mode {
    var code: UInt8 {
        switch self {
        case .warn: 0
        case .trap: 1
        case .off: 2
        }
    }
}
