import Synchronization

/// Shakes thread schedules in debug builds, so that tests meet rare interleavings: the package's synchronization
/// points yield the processor or pause for a few microseconds at random.
///
/// Set a seed to switch it on, in code or with the environment variable `CONCURRENCYKIT_CHAOS=<seed>`. A seed makes
/// the choices reproducible: the *n*th thread to reach a synchronization point after the seed was set makes the same
/// sequence of choices in every run with that seed. The points are where ConcurrencyKit's locks are taken and
/// released, and the hand-overs inside its queues, values, semaphores and subjects.
///
/// ```swift
/// import AtomicPrimitives
///
/// ScheduleChaos.seed = 42  // shake schedules, reproducibly
/// ScheduleChaos.seed = nil  // off again
/// print(ScheduleChaos.seed == nil)  // true
/// ```
///
/// When it is off — the default — each point costs one predictable branch in a debug build. In release builds of
/// ConcurrencyKit it is compiled out: ``seed`` is always `nil`.
public enum ScheduleChaos {
    /// The name of the environment variable that sets the starting ``seed``.
    public static let environmentVariable = "CONCURRENCYKIT_CHAOS"

    /// The seed of the current schedule shaking, or `nil` when it is off (the default).
    ///
    /// Setting it, even to the same seed, starts the numbering of threads again, so a test can repeat a run. In a
    /// release build of ConcurrencyKit it is always `nil` and setting it has no effect.
    public static var seed: UInt64? {
        get {
            #if DEBUG
            Self.settings.value.seed
            #else
            nil
            #endif
        }
        set {
            #if DEBUG
            Self.settings.mutate { settings in
                settings.seed = newValue
                Self.restartNumbering(&settings)
                DiagnosticSwitches.set(DiagnosticSwitches.chaos, newValue != nil)
            }
            #endif
        }
    }

    /// For the package's tests: called with each synchronization point a thread reaches while a ``seed`` is set,
    /// before the point makes its choice; `nil` (the default) for none.
    ///
    /// A test holds a thread at a named point with it, to put another thread's call exactly there: a window that
    /// random pauses hit only now and then. It runs on the thread at the point, holding whatever that point holds
    /// (``ChaosPoint/subscriberCall`` holds no lock). Setting it starts the numbering of threads again, as setting the
    /// seed does. In a release build it is always `nil`.
    package static var pointObserver: (@Sendable (ChaosPoint) -> Void)? {
        get {
            #if DEBUG
            Self.settings.value.observer
            #else
            nil
            #endif
        }
        set {
            #if DEBUG
            Self.settings.mutate { settings in
                settings.observer = newValue
                Self.restartNumbering(&settings)
            }
            #endif
        }
    }

    /// What one synchronization point did.
    @usableFromInline
    package enum Decision: Equatable, Sendable {
        /// Carried on at once.
        case proceed
        /// Called `sched_yield`.
        case yield
        /// Slept for this many microseconds.
        case pause(microseconds: UInt32)
    }

    /// The choices the thread numbered `threadOrdinal` makes at its first `count` points under `seed`.
    ///
    /// - Parameters:
    ///   - seed: The seed.
    ///   - threadOrdinal: The thread's number: 0 for the first thread to reach a point after the seed was set.
    ///   - count: How many choices.
    /// - Returns: The choices, in order.
    package static func decisions(seed: UInt64, threadOrdinal: UInt64, count: Int) -> [Decision] {
        var generator = ChaosGenerator(seed: seed, threadOrdinal: threadOrdinal)
        return (0..<count).map { _ in generator.nextDecision() }
    }

    /// The seed a value of `CONCURRENCYKIT_CHAOS` names: a decimal number; `nil` for no value or other text.
    ///
    /// - Parameter text: The variable's text.
    /// - Returns: The seed, or `nil` for chaos off.
    package static func seed(environmentValue text: String?) -> UInt64? {
        text.flatMap { UInt64($0.trimmingPrefix(while: \.isWhitespace)) }
    }

    #if DEBUG
    struct Settings {
        var seed: UInt64?
        var epoch: UInt64 = 1
        var nextOrdinal: UInt64 = 0
        var observer: (@Sendable (ChaosPoint) -> Void)?
    }

    /// The seed named by `CONCURRENCYKIT_CHAOS` when the process started.
    static let environmentSeed = Self.seed(
        environmentValue: CLibrary.environmentValue(Self.environmentVariable)
    )

    static let settings = AtomicBox(Settings(seed: Self.environmentSeed), unobserved: ())

    /// Whether a seed is set.
    static var isOn: Bool {
        DiagnosticSwitches.flags.load(ordering: .relaxed) & 2 != 0
    }

    /// `settings.epoch`, readable without the lock: a thread whose state has this epoch can use it as it is.
    private static let epoch = Atomic<UInt64>(1)

    /// Starts the numbering of threads again, under the settings' lock: every thread takes a new number at its next
    /// point, as when a run starts.
    private static func restartNumbering(_ settings: inout Settings) {
        settings.epoch &+= 1
        settings.nextOrdinal = 0
        Self.epoch.store(settings.epoch, ordering: .releasing)
    }

    private static let key = CLibrary.makeThreadKey(releasesObject: true)

    /// The calling thread's number under the current seed, assigned at its first point; `nil` when off.
    package static var currentThreadOrdinal: UInt64? {
        self.currentThread()?.ordinal
    }

    /// Makes the calling thread's next choice and carries it out.
    @discardableResult
    @usableFromInline
    package static func step(_ point: ChaosPoint) -> Decision {
        guard let thread = self.currentThread() else { return .proceed }
        thread.observer?(point)
        let decision = thread.generator.nextDecision()
        switch decision {
        case .proceed: break
        case .yield: CLibrary.yield()
        case .pause(let microseconds): CLibrary.pause(microseconds: microseconds)
        }
        return decision
    }

    private final class ThreadState {
        let epoch: UInt64
        let ordinal: UInt64
        var generator: ChaosGenerator
        let observer: (@Sendable (ChaosPoint) -> Void)?

        init(epoch: UInt64, ordinal: UInt64, seed: UInt64, observer: (@Sendable (ChaosPoint) -> Void)?) {
            self.epoch = epoch
            self.ordinal = ordinal
            self.generator = ChaosGenerator(seed: seed, threadOrdinal: ordinal)
            self.observer = observer
        }
    }

    /// The calling thread's generator for the current seed, renumbered when the seed was set since its last point.
    private static func currentThread() -> ThreadState? {
        let existing = CLibrary.threadValue(self.key).map {
            Unmanaged<ThreadState>.fromOpaque($0).takeUnretainedValue()
        }
        if let existing, existing.epoch == self.epoch.load(ordering: .acquiring), self.isOn {
            return existing
        }
        let fresh: ThreadState? = self.settings.mutate { settings in
            guard let seed = settings.seed else { return nil }
            if let existing, existing.epoch == settings.epoch { return existing }
            defer { settings.nextOrdinal += 1 }
            return ThreadState(
                epoch: settings.epoch,
                ordinal: settings.nextOrdinal,
                seed: seed,
                observer: settings.observer
            )
        }
        if let fresh, fresh !== existing {
            if let existing { Unmanaged.passUnretained(existing).release() }
            CLibrary.setThreadValue(self.key, Unmanaged.passRetained(fresh).toOpaque())
        }
        return fresh
    }
    #endif
}

/// A synchronization point of the package, where ``ScheduleChaos`` may yield or pause.
@usableFromInline
package enum ChaosPoint: Sendable {
    /// Before a lock is taken.
    case lockAcquire
    /// After a lock was released.
    case lockRelease
    /// A value's turn passes from one command to the next.
    case turnHandOver
    /// A semaphore's waiting line changes.
    case semaphoreLine
    /// A subject's mailbox is filled or drained.
    case mailbox
    /// A subject's drain has an event for a subscriber and has not yet looked whether it may call the subscriber.
    case subscriberCall
    /// A timer's state changes.
    case timerState
    /// An operation's state changes.
    case operationState
    /// A queue is entered or left.
    case queue
}

/// A synchronization point: under ``ScheduleChaos`` it may yield or pause; otherwise it is one branch in debug
/// builds and nothing in release builds.
///
/// - Parameter point: What kind of point it is.
@inlinable
@inline(__always)
package func chaosPoint(_ point: ChaosPoint) {
    #if DEBUG
    if DiagnosticSwitches.flags.load(ordering: .relaxed) & 2 != 0 {  // the chaos bit
        ScheduleChaos.step(point)
    }
    #endif
}
