import AtomicPrimitives

/// A clock whose time moves only when a test moves it.
///
/// Give code under test a `some Clock<Duration>` parameter, pass a `TestClock` in the test, and move its time with
/// ``advance(by:)``, ``advance(to:)`` or ``run(timeout:)``. No real time passes: a one-hour timeout is over as soon as the
/// test says so, and the test decides exactly when.
///
/// ```swift
/// import ConcurrencyKitTesting
///
/// let clock = TestClock()
/// let reminder = Task {
///     try await clock.sleep(for: .seconds(60))
///     return "time's up"
/// }
/// try await clock.waitForSleepers(1)  // the task really sleeps now
/// clock.advance(by: .seconds(59))
/// print(clock.deadlines)  // [60.0 seconds]
/// clock.advance(by: .seconds(1))
/// print(try await reminder.value)  // time's up
/// ```
///
/// A *sleeper* is a call to ``sleep(until:tolerance:)`` that waits for its deadline. The clock sees its sleepers
/// and nothing else: not the tasks that compute, nor those that wait on a semaphore, a continuation or another
/// clock. Everything it promises is about its sleepers:
///
/// - ``advance(to:)`` wakes every sleeper whose deadline has come, earliest deadline first (equal deadlines in the
///   order they went to sleep). A sleep until ``now`` or earlier returns at once.
/// - A sleeper whose task is cancelled leaves at once, from inside `cancel()`, and throws `CancellationError`.
/// - ``waitForSleepers(_:timeout:)`` suspends the test until the code under test really sleeps, so that the test
///   moves time only once the code has reached its sleep.
/// - ``run(timeout:)`` and ``run(timeout:_:)`` move time from deadline to deadline on their own, and report what sleeps
///   instead of hanging when nothing can run: see <doc:TestingTimeDependentCode> for what they can and cannot see.
///
/// Each test makes its own clock: a clock has no global state and installs no process-wide hook, so tests that run
/// in parallel, as Swift Testing runs them, never see each other's time. The clock is `Sendable`: advance it from
/// the test while the code under test sleeps on it from other tasks, on any actor.
public final class TestClock: Clock, Sendable {
    let state: AtomicBox<TestClockState>

    /// Creates a clock whose time starts at `now`.
    ///
    /// - Parameter now: The clock's first instant; the default is offset zero.
    public init(now: Instant = Instant()) {
        self.state = AtomicBox(TestClockState(now: now), name: "TestClock")
    }

    /// The clock's time: where the last advance left it.
    public var now: Instant {
        self.state.mutate { $0.now }
    }

    /// The smallest step the clock can take: none, since it moves only when told.
    public var minimumResolution: Duration {
        .zero
    }

    /// The deadlines of the sleepers that wait now, earliest first.
    ///
    /// A sleeper counts from the moment its task is suspended in ``sleep(until:tolerance:)`` until an advance wakes
    /// it or its task is cancelled.
    public var deadlines: [Instant] {
        self.state.mutate { $0.deadlines }
    }

    /// Suspends the task until the clock's time reaches `deadline`.
    ///
    /// A deadline at ``now`` or earlier returns at once, without suspending. Otherwise the task sleeps until
    /// ``advance(to:)``, ``advance(by:)`` or ``run(timeout:)`` moves the time to `deadline` or past it.
    ///
    /// - Parameters:
    ///   - deadline: The instant to wake at.
    ///   - tolerance: Ignored: the clock wakes each sleeper exactly at its deadline.
    /// - Throws: `CancellationError` if the task is cancelled before it is woken, also if it already is when it
    ///   calls. The sleeper then leaves at once.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = self.state.mutate { $0.makeID() }
        // Shown in WaitReport while it sleeps; not parked for a run's idle detection: the clock sees its sleepers.
        var asleep: TaskWaitEntry?
        defer { if let asleep { TaskWaits.end(asleep) } }
        let wasWoken = try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Bool, any Error>) in
                if self.register(id, deadline: deadline, continuation) {
                    asleep = TaskWaits.begin(
                        on: self,
                        as: Self.sleepCall,
                        state: "sleeps until \(deadline)",
                        parks: false
                    )
                }
            }
        } onCancel: {
            let removed = self.state.mutate { $0.remove(sleeper: id) }
            guard let (sleeper, wakeups) = removed else { return }
            sleeper.continuation.resume(throwing: CancellationError())
            wakeups.resume()
        }
        if wasWoken {
            self.state.mutate { $0.land() }.resume()
        }
    }

    /// Moves the time forward by `duration`, and wakes every sleeper whose deadline has come.
    ///
    /// The same as `advance(to: now.advanced(by: duration))`: see ``advance(to:)``.
    ///
    /// - Parameter duration: How far to move; zero wakes only the sleepers due now, which is none. It must not be
    ///   negative: the clock traps with a message.
    public func advance(by duration: Duration) {
        guarantee(
            duration >= .zero,
            "TestClock.advance(by:): the duration must not be negative, since time cannot go back; got \(duration)"
        )
        let wakeups = self.state.mutate { state in state.advance(to: state.now.advanced(by: duration)) }
        wakeups.resume()
    }

    /// Moves the time forward to `instant`, and wakes every sleeper whose deadline has come.
    ///
    /// The sleepers are resumed earliest deadline first, equal deadlines in the order they went to sleep, and
    /// ``now`` is `instant` when the call returns. It does not wait for the woken tasks to run: they run on their own
    /// executors, in whatever order those take them up, and one that reads ``now`` sees `instant`, not its own
    /// deadline. To see each deadline in turn, move to one deadline at a time, after ``waitForSleepers(_:timeout:)``
    /// has seen the code under test asleep again. ``run(timeout:)`` moves one deadline at a time too, but waits only
    /// until each woken task is back out of its sleep, not until it has done what follows, so with several sleepers
    /// the code after one sleep can run after the time has moved on.
    ///
    /// - Parameter instant: Where to move the time; ``now`` or later. An earlier instant traps with a message.
    public func advance(to instant: Instant) {
        let wakeups = self.state.mutate { state in
            guarantee(
                instant >= state.now,
                "TestClock.advance(to:): time cannot go back; now is \(state.now), asked to move to \(instant)"
            )
            return state.advance(to: instant)
        }
        wakeups.resume()
    }

    /// How the wait report names a sleep; its site is not known.
    private static let sleepCall = BlockingCall(
        api: "TestClock.sleep(until:tolerance:)",
        alternative: "",
        file: "",
        line: 0
    )

    /// Puts a sleeper in line, or resumes it at once if its deadline has come or its task is cancelled.
    ///
    /// - Returns: Whether it is asleep: in line, with its task about to suspend.
    private func register(_ id: UInt64, deadline: Instant, _ continuation: UnsafeContinuation<Bool, any Error>) -> Bool
    {
        enum Registration {
            case cancelled
            case due
            case asleep(TestClockState.Wakeups)
        }
        let registration = self.state.mutate { state -> Registration in
            // A cancel that came before this found no sleeper to take out: the flag is set before the handler runs.
            if Task.isCancelled { return .cancelled }
            if deadline <= state.now { return .due }
            let sleeper = TestClockState.Sleeper(id: id, deadline: deadline, continuation: continuation)
            return .asleep(state.insert(sleeper))
        }
        switch registration {
        case .cancelled: continuation.resume(throwing: CancellationError())
        case .due: continuation.resume(returning: false)
        case .asleep(let wakeups): wakeups.resume()
        }
        if case .asleep = registration { return true }
        return false
    }
}
