import AtomicPrimitives

extension TestClock {
    /// Suspends until at least `count` sleepers wait on the clock.
    ///
    /// The sound way to know that the code under test has reached its sleep: a task counts as a sleeper only once it
    /// is suspended in ``sleep(until:tolerance:)``. Move the time after this returns, and the move cannot come
    /// too early.
    ///
    /// ```swift
    /// import ConcurrencyKitTesting
    ///
    /// let clock = TestClock()
    /// for seconds in [3, 1, 2] {
    ///     Task {
    ///         try await clock.sleep(for: .seconds(seconds))
    ///         print("woke after \(seconds) s")
    ///     }
    /// }
    /// try await clock.waitForSleepers(3)
    /// print(clock.deadlines)  // [1.0 seconds, 2.0 seconds, 3.0 seconds]
    /// ```
    ///
    /// - Parameters:
    ///   - count: How many sleepers to wait for; 0 or more.
    ///   - timeout: How long to wait at most, in real time.
    /// - Throws: ``TestClockError`` with ``TestClockError/Reason/sleepersMissing(expected:)`` if fewer than `count`
    ///   sleep when the time is up; `CancellationError` if the task is cancelled.
    public func waitForSleepers(_ count: Int, timeout: Duration = .seconds(10)) async throws {
        guarantee(count >= 0, "TestClock.waitForSleepers(_:timeout:): the count must not be negative; got \(count)")
        let limit = ContinuousClock.now.advanced(by: timeout)
        var watchdog: Task<Void, Never>?
        defer { watchdog?.cancel() }
        while true {
            try Task.checkCancellation()
            let (sleepers, version) = self.state.mutate { ($0.sleepers.count, $0.version) }
            if sleepers >= count { return }
            if ContinuousClock.now >= limit { throw self.error(.sleepersMissing(expected: count), timeout) }
            watchdog = watchdog ?? self.nudge(every: timeout)
            await self.changed(since: version)
        }
    }

    /// Moves the time from deadline to deadline until no task sleeps on the clock.
    ///
    /// Each step waits until every task the clock has woken has come back out of its sleep, then moves the time to
    /// the earliest deadline and wakes the sleepers due then. The clock is *idle* when no task sleeps on it and none
    /// that it woke is still on its way back; `run()` returns then. What it cannot see — a task that computes
    /// between two sleeps, or waits for a signal — is in <doc:TestingTimeDependentCode>: code that does something
    /// between a wake and its next sleep is better run with ``run(timeout:_:)``, which waits for it.
    ///
    /// ```swift
    /// import ConcurrencyKitTesting
    ///
    /// let clock = TestClock()
    /// let sleeper = Task {
    ///     try await clock.sleep(for: .seconds(3_600))
    ///     print("an hour later")
    /// }
    /// try await clock.waitForSleepers(1)
    /// try await clock.run()
    /// try await sleeper.value
    /// print(clock.now)  // 3600.0 seconds
    /// ```
    ///
    /// `run()` returns the first time it looks and finds the clock idle. So a loop that sleeps again after each wake
    /// (an endless timer, a poll) ends the run whenever the run looks between a wake and the next sleep, after a
    /// step or after many; only if it finds the loop asleep every time does it throw
    /// ``TestClockError/Reason/neverIdle``. Give such a loop to ``run(timeout:_:)``, which waits for its next sleep.
    ///
    /// - Parameter timeout: How long, in real time, `run()` waits for a change on the clock, and how long it runs at
    ///   most while things keep changing.
    /// - Throws: ``TestClockError``: ``TestClockError/Reason/wakeNotResumed`` if a woken task has not come back out
    ///   of its sleep for `timeout`; ``TestClockError/Reason/neverIdle`` if it still moves the time after `timeout`,
    ///   having moved it at least 100 times: only when something sleeps on the clock every time it looks.
    ///   `CancellationError` if the task is cancelled.
    public func run(timeout: Duration = .seconds(10)) async throws {
        try await self.drive(until: { false }, scope: nil, timeout: timeout)
    }

    /// Runs `operation` and moves the time for it, from deadline to deadline, until it returns.
    ///
    /// The way to await code that sleeps on the clock: awaiting it directly would hang, since nothing would move
    /// the time. While `operation` runs, the clock steps as ``run(timeout:)`` does, and when nothing sleeps it waits for the
    /// operation to sleep again or to return, instead of stopping. It returns what the operation returns, as soon as
    /// it does, even if other tasks still sleep on the clock.
    ///
    /// Tasks parked in ConcurrencyKit's waits (a `CountingSemaphore`, a value's turn, a group) do not stop the time:
    /// while something sleeps, the run moves past them. The operation's task, its child tasks and the tasks it makes
    /// with `Task { }` count their parked waits in the run's scope; when nothing sleeps and tasks of the scope wait
    /// for each other in a cycle, each in a wait without a deadline, the run throws
    /// ``TestClockError/Reason/deadlock`` at once, with the `WaitReport` that names the cycle. See "Tasks parked in
    /// ConcurrencyKit's waits" in <doc:TestingTimeDependentCode>.
    ///
    /// The run moves the time from its start, not from the operation's first sleep: a task that already sleeps on the
    /// clock when `run` is called can be woken at its deadline before the operation has reached its first sleep, so
    /// the operation may first read a ``now`` later than the one `run` was called at. To begin the operation at the
    /// current time while others sleep on the clock, start it in a task, wait with ``waitForSleepers(_:timeout:)``
    /// until it sleeps too, and then `run { try await task.value }`.
    ///
    /// ```swift
    /// import ConcurrencyKitTesting
    ///
    /// /// Tries `attempt` up to three times, one second apart.
    /// func fetch(clock: some Clock<Duration>, attempt: () throws -> String) async throws -> String {
    ///     for _ in 1..<3 {
    ///         if let value = try? attempt() { return value }
    ///         try await clock.sleep(for: .seconds(1))
    ///     }
    ///     return try attempt()
    /// }
    ///
    /// struct Offline: Error {}
    /// let clock = TestClock()
    /// let value = try await clock.run {
    ///     var failures = 2
    ///     return try await fetch(clock: clock) {
    ///         failures -= 1
    ///         if failures >= 0 { throw Offline() }
    ///         return "data"
    ///     }
    /// }
    /// print(value, clock.now)  // data 2.0 seconds
    /// ```
    ///
    /// - Parameters:
    ///   - timeout: How long, in real time, the run waits for a change on the clock or for the operation to return,
    ///     and how long it runs at most while things keep changing.
    ///   - operation: The code under test. It runs in a task of its own, which inherits the caller's priority and
    ///     task-local values, on the actor its closure names (`{ @MainActor in … }`), or on none.
    /// - Returns: What `operation` returns.
    /// - Throws: What `operation` throws. ``TestClockError`` if the operation has not returned and
    ///   ``TestClockError/Reason/deadlock``: nothing slept on the clock and its tasks waited in a cycle (thrown as
    ///   soon as it is seen); ``TestClockError/Reason/nothingCanRun``: nothing slept on the clock and nothing changed
    ///   for `timeout` (the message adds the waits of the operation's tasks parked in ConcurrencyKit's waits);
    ///   ``TestClockError/Reason/wakeNotResumed``: a woken task did not come back out of its sleep for `timeout`;
    ///   ``TestClockError/Reason/neverIdle``: it still moved the time after `timeout`, having moved it at least 100
    ///   times, as it does when the operation sleeps again after every wake. `CancellationError` if the task is
    ///   cancelled. When it throws for any of these, it cancels the operation's task and does not wait for it.
    public func run<Value: Sendable>(
        timeout: Duration = .seconds(10),
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let returned = AtomicBox(false, name: "TestClock.run")
        // The operation's task and the tasks that inherit its task-local values count their waits in the scope;
        // each park and unpark counts as a change on the clock, so that the run looks again.
        let scope = TaskWaitScope { [weak self] in self?.touch() }
        let task = Task {
            defer {
                returned.mutate { $0 = true }
                self.touch()
            }
            return try await TaskWaitScope.$current.withValue(scope) { try await operation() }
        }
        do {
            try await self.drive(until: { returned.value }, scope: scope, timeout: timeout)
        } catch {
            task.cancel()
            throw error
        }
        return try await task.value
    }

    /// The loop behind ``run(timeout:)`` and ``run(timeout:_:)``: wakes sleepers one deadline at a time, each time once no
    /// wake is on its way back, until `isDone()`, or until idle when no operation is pending (no `scope`).
    ///
    /// It gives up when nothing has changed on the clock for `timeout` (stuck), or when it still moves the time after
    /// `timeout` in all, having moved it at least `busyAdvances` times (never idle): a few late steps on a busy
    /// machine are not an endless timer. With an operation pending, each time nothing sleeps and no wake is on its way
    /// back, it looks for a deadlock among the tasks of the operation's `scope` (``deadlock(in:since:)``).
    private func drive(until isDone: () -> Bool, scope: TaskWaitScope?, timeout: Duration) async throws {
        enum Step {
            case wait
            case woke(TestClockState.Wakeups)
            case stalled
            case idle
        }
        let start = ContinuousClock.now
        var seenVersion = self.state.mutate { $0.version }
        var quietSince = start
        var advances = 0
        // Wakes the loop while it waits, so that it sees the time pass.
        let watchdog = self.nudge(every: max(timeout / 4, .milliseconds(1)))
        defer { watchdog.cancel() }
        while true {
            try Task.checkCancellation()
            // Read before `isDone()`: an operation that returns after that look changes the version after it.
            let version = self.state.mutate { $0.version }
            if isDone() { return }
            let now = ContinuousClock.now
            if version != seenVersion {
                seenVersion = version
                quietSince = now
                if now - start >= timeout && advances >= Self.busyAdvances {
                    throw self.error(.neverIdle, timeout, advances: advances)
                }
            } else if now - quietSince >= timeout {
                let wakesInFlight = self.state.mutate { $0.wakesInFlight }
                if wakesInFlight > 0 { throw self.error(.wakeNotResumed, timeout) }
                // What the operation's tasks wait for, if they are parked in the package's waits.
                let parked = scope.map { !$0.parked.isEmpty } == true ? WaitReport.current : nil
                throw self.error(.nothingCanRun, timeout, report: parked)
            }
            let step = self.state.mutate { state -> Step in
                if state.wakesInFlight > 0 { return .wait }
                if let wakeups = state.advanceToEarliestDeadline() { return .woke(wakeups) }
                return scope != nil ? .stalled : .idle
            }
            switch step {
            case .idle: return
            case .woke(let wakeups):
                advances += 1
                wakeups.resume()
            case .stalled:
                if let scope, let report = self.deadlock(in: scope, since: version) {
                    throw self.error(.deadlock, timeout, report: report)
                }
                await self.changed(since: version)
            case .wait: await self.changed(since: version)
            }
        }
    }

    /// How many times a run must have moved the time before it can be found never idle.
    static let busyAdvances = 100

    /// A ``TestClockError`` with the clock's time and sleepers as they are now.
    private func error(
        _ reason: TestClockError.Reason,
        _ timeout: Duration,
        advances: Int = 0,
        report: WaitReport? = nil
    ) -> TestClockError {
        let (now, deadlines) = self.state.mutate { ($0.now, $0.deadlines) }
        return TestClockError(
            reason: reason,
            now: now,
            deadlines: deadlines,
            timeout: timeout,
            advances: advances,
            waitReport: report
        )
    }

    /// The wait report, if it names a deadlock that only tasks of `scope` are in, each parked in a wait without a
    /// deadline, while the clock has not changed since `version` (nothing sleeps on it, no wake is on its way back,
    /// and no task of the scope has parked or resumed since).
    ///
    /// What this can know: the tasks of the scope that are parked in the package's waits (a semaphore, a value's
    /// turn, a group, a Queuer), and who holds what they wait for, as ``WaitReport`` finds it. Such a cycle can never
    /// end by itself: every task in it waits for the next, none has a deadline, and the clock's sleepers cannot reach
    /// them (there are none). What it cannot know: tasks that compute, or wait on anything else (a continuation, an
    /// `AsyncStream`, another task's value, a sleep on another clock), and whether such a task would have released
    /// something; so without a cycle it never concludes, and the run ends with
    /// ``TestClockError/Reason/nothingCanRun`` after its timeout as before.
    private func deadlock(in scope: TaskWaitScope, since version: UInt64) -> WaitReport? {
        let parked = scope.parked
        guard !parked.isEmpty else { return nil }
        let report = WaitReport.current
        let ours = report.deadlocks.contains { deadlock in
            deadlock.waits.allSatisfy { $0.waiter.kind == .task && parked.contains($0.waiter.id) }
        }
        guard ours, self.state.mutate({ $0.version }) == version, scope.parked == parked else { return nil }
        return report
    }

    /// Suspends until the state has changed since `version`, a watchdog nudges, or the task is cancelled.
    private func changed(since version: UInt64) async {
        let id = self.state.mutate { $0.makeID() }
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                // A cancel that came before this found no watcher to take out: the flag is set before the handler
                // runs.
                let watching = self.state.mutate { !Task.isCancelled && $0.watch(id, since: version, continuation) }
                if !watching { continuation.resume() }
            }
        } onCancel: {
            self.state.mutate { $0.unwatch(id) }?.resume()
        }
    }

    /// Counts a change, so that every watcher looks again.
    private func touch() {
        self.state.mutate { $0.changed() }.resume()
    }

    /// A task that wakes every watcher every `period` of real time, without counting a change, so that a waiting
    /// loop sees the time pass; cancel it when the loop ends.
    private func nudge(every period: Duration) -> Task<Void, Never> {
        Task { [weak self] in
            while true {
                do { try await Task.sleep(for: period) } catch { return }
                guard let self else { return }
                self.state.mutate { $0.takeWatchers() }.resume()
            }
        }
    }
}
