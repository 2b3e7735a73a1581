import Dispatch

extension CountingSemaphore {
    /// Takes a resource, suspending the task — not blocking its thread — until one is free.
    ///
    /// Blocked threads and suspended tasks wait in one line and get resources in the order they arrived. The name has
    /// no blocking overload, so it suspends wherever it is written, also in the top-level code of a `main.swift`, where
    /// `try await semaphore.wait()` picks the blocking ``wait(file:line:)`` and does not compile.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before it gets a resource; the call then holds no
    ///   resource, and no resource is lost. A task that is already cancelled throws at once. A resource granted before
    ///   the cancellation is kept, and the call returns normally: give it back with ``signal()``.
    ///
    /// A task that has to wait shows in ``WaitReport`` while it is suspended, with `file` and `line`.
    ///
    /// - Parameters:
    ///   - file: Where the call is made, for ``WaitReport``; leave the default.
    ///   - line: Where the call is made, for ``WaitReport``; leave the default.
    @inlinable
    public func acquire(file: StaticString = #fileID, line: UInt = #line) async throws {
        // The common case, a free resource, is a plain call inlined into the caller: no async frame.
        if self.takeIfFreeForTask() { return }
        try await self.waitInLine(as: "CountingSemaphore.acquire()", file: file, line: line)
    }

    /// Takes a resource, suspending the task until one is free: the same as ``acquire(file:line:)``.
    ///
    /// In an `async` function this is the overload `try await semaphore.wait()` calls. In the top-level code of a
    /// `main.swift` that call picks the blocking ``wait(file:line:)`` instead, and does not compile: write
    /// `try await semaphore.acquire()` there.
    ///
    /// It has no `file` and `line` of its own (they would make it the blocking form's twin in name): ``WaitReport``
    /// shows where ``acquire(file:line:)`` is called, not where this is.
    ///
    /// - Throws: `CancellationError` if the task is cancelled before it gets a resource, as ``acquire(file:line:)``
    ///   does.
    @inlinable
    public func wait() async throws {
        if self.takeIfFreeForTask() { return }
        try await self.waitInLine(as: "CountingSemaphore.wait()", file: "", line: 0)
    }

    /// Takes a free resource for a task that is not cancelled; `false` if it must wait, or throw.
    @usableFromInline
    func takeIfFreeForTask() -> Bool {
        !Task.isCancelled && self.takeIfFree()
    }

    /// The rest of ``acquire(file:line:)``: throws if the task is cancelled, waits in line otherwise, as `api`.
    @usableFromInline
    func waitInLine(as api: StaticString, file: StaticString, line: UInt) async throws {
        let call = BlockingCall(api: api, alternative: "", file: file, line: line)
        if await self.take(timeout: nil, as: call) != .granted { throw CancellationError() }
    }

    /// Takes a resource, suspending the task until one is free or `timeout` has passed.
    ///
    /// The time is measured on the continuous clock; ``wait(timeout:clock:file:line:)`` measures it on another. A wait that is
    /// granted a resource or cancelled before its deadline cancels its Dispatch timer at once: no timer outlives its
    /// wait.
    ///
    /// - Parameters:
    ///   - timeout: How long to wait at most. Zero or less (or less than a nanosecond) takes only a resource that is
    ///     free right away; a duration too long to represent in nanoseconds (about 292 years or more, up to the
    ///     largest `Duration`) waits without a limit.
    ///   - file: Where the call is made, for ``WaitReport``; leave the default.
    ///   - line: Where the call is made, for ``WaitReport``; leave the default.
    /// - Returns: `true` if a resource was taken; `false` if the time ran out, or the task was cancelled, first.
    public func wait(timeout: Duration, file: StaticString = #fileID, line: UInt = #line) async -> Bool {
        let call = BlockingCall(api: "CountingSemaphore.wait(timeout:)", alternative: "", file: file, line: line)
        return await self.take(timeout: timeout, as: call) == .granted
    }

    /// Takes a resource, suspending the task until one is free or `timeout` has passed on `clock`.
    ///
    /// A test can pass a clock that it moves itself, such as `TestClock` from ConcurrencyKitTesting, and see the wait
    /// time out exactly when that clock reaches the deadline, without waiting for real time:
    ///
    /// ```swift
    /// import AtomicPrimitives
    /// import ConcurrencyKitTesting
    ///
    /// let clock = TestClock()
    /// let semaphore = CountingSemaphore()
    /// let granted = try await clock.run { await semaphore.wait(timeout: .seconds(30), clock: clock) }
    /// print(granted, clock.now)  // false 30.0 seconds
    /// ```
    ///
    /// A wait that ends early, granted a resource or cancelled, takes its timer with it: a granted wait never keeps a
    /// timer alive until its deadline. On the continuous and the suspending clock the timer is a Dispatch timer, as
    /// in ``wait(timeout:file:line:)``. On another clock it is a task that sleeps on that clock until the deadline, cancelled
    /// as the wait ends; the clock must end a cancelled sleep promptly, as `TestClock` does. (The standard clocks'
    /// own sleeps keep about 700 bytes each until their deadline when cancelled, which is why they get the Dispatch
    /// timer.)
    ///
    /// - Parameters:
    ///   - timeout: How long to wait at most, by the same rules as ``wait(timeout:file:line:)``: zero or less (or less than a
    ///     nanosecond) takes only a resource that is free right away; a duration too long to represent in nanoseconds
    ///     waits without a limit, and sets no sleeper on `clock`.
    ///   - clock: The clock that measures `timeout`.
    ///   - file: Where the call is made, for ``WaitReport``; leave the default.
    ///   - line: Where the call is made, for ``WaitReport``; leave the default.
    /// - Returns: `true` if a resource was taken; `false` if the time ran out, or the task was cancelled, first.
    public func wait(
        timeout: Duration,
        clock: some Clock<Duration>,
        file: StaticString = #fileID,
        line: UInt = #line
    ) async -> Bool {
        let call = BlockingCall(api: "CountingSemaphore.wait(timeout:clock:)", alternative: "", file: file, line: line)
        let outcome =
            if clock.isMeasuredByDispatch {
                await self.take(timeout: timeout, as: call)
            } else {
                await self.take(timeout: timeout, on: clock, as: call)
            }
        return outcome == .granted
    }

    /// Takes a resource, runs `body`, and gives the resource back, also when `body` throws.
    ///
    /// The async counterpart of ``perform(file:line:_:)``: at most as many bodies run at once as the semaphore has resources,
    /// and the waiting suspends instead of blocking a thread. While `body` runs, ``WaitReport`` names the task as a
    /// holder of the semaphore, taken at `file`:`line`.
    ///
    /// `body` runs inline, in the calling task, with the caller's isolation: it need not be `Sendable`, and from a
    /// `@MainActor` type or an actor it may touch that type's state, as `try await permits.withPermit { count += 1 }`
    /// does. This is the package's isolation rule, in "Isolation" of the async guide (Docs/AsyncCode.md).
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor, where `body` runs; inferred.
    ///   - file: Where the call is made, for ``WaitReport``; leave the default.
    ///   - line: Where the call is made, for ``WaitReport``; leave the default.
    ///   - body: Runs once a resource is taken.
    /// - Returns: What `body` returns.
    /// - Throws: `CancellationError` if the task is cancelled while it waits (then `body` does not run), or what
    ///   `body` throws.
    public func withPermit<Result>(
        isolation: isolated (any Actor)? = #isolation,
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: () async throws -> Result
    ) async throws -> Result {
        if !self.takeIfFreeForTask() {
            try await self.waitInLine(as: "CountingSemaphore.withPermit(_:)", file: file, line: line)
        }
        let holder = self.noteHolder(TaskWaits.currentTask | 1, file: file, line: line)
        defer {
            self.clearHolder(holder)
            self.signal()
        }
        return try await body()
    }

    /// The outcome of a task's wait that need not queue: cancelled, granted a free resource, or out of time at once
    /// (a `deadline` of now); `nil` if it must queue.
    private func outcomeWithoutQueueing(deadline: Deadline) -> SemaphoreWaiter.State? {
        if Task.isCancelled { return .cancelled }
        if self.takeIfFree() { return .granted }
        if deadline == .now { return .timedOut }
        return nil
    }

    /// Takes a resource for a task: at once if one is free, otherwise after a place in the line, for at most
    /// `timeout` on the continuous clock, or without a limit if it is `nil`.
    private func take(timeout: Duration?, as call: BlockingCall) async -> SemaphoreWaiter.State {
        let deadline = timeout.map { Deadline(after: $0) } ?? .never
        if let outcome = self.outcomeWithoutQueueing(deadline: deadline) { return outcome }
        let waiter = SemaphoreWaiter(state: .arriving, hasDeadline: deadline != .never)
        return await self.queue(waiter, timerAt: deadline, as: call)
    }

    /// Takes a resource for a task: at once if one is free, otherwise after a place in the line, for at most
    /// `timeout` on `clock`.
    ///
    /// The deadline is a task that sleeps on `clock` and then takes the waiter out of the line as timed out. It holds
    /// the waiter but not the semaphore, and is cancelled as soon as the wait ends, whichever way. A timeout too long
    /// to represent has no sleeper: the wait has no limit.
    private func take(
        timeout: Duration,
        on clock: some Clock<Duration>,
        as call: BlockingCall
    ) async -> SemaphoreWaiter.State {
        let span = Deadline.Span(timeout)
        if let outcome = self.outcomeWithoutQueueing(deadline: Deadline(after: span)) { return outcome }
        guard span != .unlimited else {
            return await self.queue(SemaphoreWaiter(state: .arriving), timerAt: .never, as: call)
        }
        let deadline = clock.now.advanced(by: timeout)
        let waiter = SemaphoreWaiter(state: .arriving, hasDeadline: true)
        return await self.queue(waiter, timerAt: .never, as: call) {
            Task { [weak self] in
                do { try await clock.sleep(until: deadline, tolerance: nil) } catch { return }
                self?.leave(waiter, as: .timedOut)
            }
        }
    }

    /// Suspends until `waiter` leaves the line: granted, cancelled, or timed out by its Dispatch timer (at
    /// `deadline`; none for never) or by the sleeper that `makeSleeper` starts.
    ///
    /// Once in the line, the task's wait is recorded for ``WaitReport`` as `call`, until it resumes.
    private func queue(
        _ waiter: SemaphoreWaiter,
        timerAt deadline: Deadline,
        as call: BlockingCall,
        sleeper makeSleeper: (() -> Task<Void, Never>)? = nil
    ) async -> SemaphoreWaiter.State {
        await withTaskCancellationHandler {
            // The sleeper starts only once the cancellation handler is in place, and is the waiter's from the start:
            // a cancellation that comes after it can have reached its clock takes it off from inside `cancel()`.
            let sleeper = makeSleeper.flatMap { self.startSleeper($0, for: waiter) }
            // Whoever takes the waiter out of the line cancels its sleeper, at once (a `signal()` that grants it,
            // too); this covers a wait that ended on its way to the line.
            defer { sleeper?.cancel() }
            var parked: TaskWaitEntry?
            let state = await withUnsafeContinuation { continuation in
                if self.enqueue(waiter, continuation: continuation, deadline: deadline) {
                    // A wait with a deadline is not parked for a scope: its timer or sleeper can end it.
                    parked = TaskWaits.begin(on: self, as: call, parks: deadline == .never && makeSleeper == nil)
                }
            }
            waiter.observeEnding()
            if let parked { TaskWaits.end(parked) }
            return state
        } onCancel: {
            self.leave(waiter, as: .cancelled)
        }
    }

    /// Starts the sleeper of an arriving `waiter` with `makeSleeper`, as the waiter's: under the lock, so that a
    /// cancellation (``leave(_:as:)``) either comes first, and no sleeper starts, or finds it and cancels it.
    ///
    /// `makeSleeper` only creates a task; the task runs the clock's code elsewhere, never under the lock.
    /// - Returns: The sleeper; `nil` if the wait has already ended.
    private func startSleeper(
        _ makeSleeper: () -> Task<Void, Never>,
        for waiter: SemaphoreWaiter
    ) -> Task<Void, Never>? {
        self.core.lock(onReentry: { CountingSemaphore.trapReentry() })
        defer { self.core.unlock() }
        guard waiter.state == .arriving else { return nil }
        let sleeper = makeSleeper()
        waiter.sleeper = sleeper
        return sleeper
    }

    /// Puts `waiter` in the line, with a timer that takes it out at `deadline` (or its sleeper, which does the same
    /// on another clock), unless it is granted a resource or cancelled on its way.
    ///
    /// - Returns: Whether it joined the line (and the task suspends); `false` if its wait has ended.
    private func enqueue(
        _ waiter: SemaphoreWaiter,
        continuation: UnsafeContinuation<SemaphoreWaiter.State, Never>,
        deadline: Deadline
    ) -> Bool {
        // Made before the lock is taken: the lock guards only the line.
        let timer = deadline == .never ? nil : self.makeTimer(for: waiter, firingAt: deadline.dispatchTime)
        self.core.lock(onReentry: { CountingSemaphore.trapReentry() })
        // Cancelled on its way to the line, or signalled since the first look; otherwise it joins the line.
        let outcome: SemaphoreWaiter.State? =
            waiter.state != .arriving ? waiter.state : self.count.takeOrQueue() ? .granted : nil
        if let outcome {
            if outcome == .granted {
                waiter.state = .granted
                waiter.sleeper = nil
            }
            self.core.unlock()
            continuation.resume(returning: outcome)
            // Never armed: cancelled first, so that it never fires, then activated, as Dispatch requires of a timer
            // before its release.
            timer?.cancel()
            timer?.activate()
            return false
        }
        waiter.continuation = continuation
        waiter.timer = timer
        self.line.append(waiter)
        // Armed before the lock is released; arming neither blocks nor calls back. A task resumed before it has
        // suspended (by this timer or a `signal()` that takes the lock right after the release) is correct, but
        // ThreadSanitizer cannot see how the runtime orders that case: `observeEnding()` gives the task its edge,
        // and scripts/tsan.supp names the runtime's own report.
        timer?.activate()
        self.core.unlock()
        return true
    }

    /// A timer on a global queue that takes `waiter` out of the line as timed out at `deadline`.
    ///
    /// It holds the waiter but not the semaphore, and whoever ends the wait cancels it at once, which releases it.
    private func makeTimer(for waiter: SemaphoreWaiter, firingAt deadline: DispatchTime) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: deadline)
        timer.setEventHandler { [weak self] in
            self?.leave(waiter, as: .timedOut)
        }
        return timer
    }

    /// Takes `waiter` out of the line without a resource, unless a `signal()` has already granted it one.
    private func leave(_ waiter: SemaphoreWaiter, as outcome: SemaphoreWaiter.State) {
        self.core.lock(onReentry: { CountingSemaphore.trapReentry() })
        switch waiter.state {
        case .arriving:
            // Not in the line yet: `enqueue` sees the outcome and ends the wait; a sleeper already started goes now.
            waiter.state = outcome
            let sleeper = waiter.sleeper
            waiter.sleeper = nil
            self.core.unlock()
            sleeper?.cancel()
        case .queued:
            self.takeOutOfLine(waiter)
            let ending = waiter.end(as: outcome)
            self.core.unlock()
            ending.complete()
        case .granted, .cancelled, .timedOut:
            self.core.unlock()
        }
    }
}
