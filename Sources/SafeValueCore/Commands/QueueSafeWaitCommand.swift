/// The commands of the `wait` schedule: each blocks the calling thread until it has run, and runs its closures there.
///
/// The commands are unavailable from async code, where the compiler names the `suspend` command to use instead (the
/// `async` schedule's, for the manual forms). In debug builds a `wait` command holds the value's turn as a lock in the
/// lock-order graph, and one issued from inside a Swift concurrency task (through a synchronous function) is
/// reported once per call site when it has to wait: for the turn while another command holds it, or for a manual
/// completion's `done`; one that finds the value free and ends at once is not. Each command takes the caller's `file` and `line` for those reports (see
/// `LockOrderChecking`), and for the main-queue doctor's warning.
///
/// > Warning: Issuing a `wait` command from inside a command closure, or an `async` command's completion, of the
/// > same value would deadlock; it returns ``QueueSafeValueError/reentrantWait`` at once instead. Do not issue one
/// > from any other block on a serial queue that `async` commands of the same value use: the queue would be blocked
/// > waiting for a command that needs the queue.
public struct QueueSafeWaitCommand<Value> {
    @usableFromInline
    let storage: ValueStorage<Value>
    @usableFromInline
    let priority: CommandPriority

    @usableFromInline
    init(storage: ValueStorage<Value>, priority: CommandPriority) {
        self.storage = storage
        self.priority = priority
    }

    /// Reads the value.
    ///
    /// When it has to wait, the command that releases the value may read it for this thread (flat combining), in
    /// its place in the queue, so that the value does not wait for this thread to wake.
    ///
    /// - Parameters:
    ///   - file: The caller's file, for the debug-build reports (see ``QueueSafeWaitCommand``).
    ///   - line: The caller's line, for those reports.
    /// - Returns: A copy of the value, or why the command did not run.
    @available(
        *,
        noasync,
        message:
            "QueueSafeValue's wait commands block the calling thread; in async code use the suspend schedule: `await value.suspend.lowestPriority.get()` (top-level code with an `await` anywhere is async code too)"
    )
    @inlinable
    @inline(__always)
    public func get(file: StaticString = #fileID, line: UInt = #line) -> Result<Value, QueueSafeValueError> {
        self.performCombinable(.get, .get, file: file, line: line)
    }

    /// Reads the value, or throws why the command did not run: ``get(file:line:)`` without a `Result` to unpack.
    ///
    /// ```swift
    /// import SafeValueCore
    ///
    /// let cart = QueueSafeValue(value: ["apples"])
    /// do {
    ///     let items = try cart.wait.lowestPriority.read()
    ///     print(items)  // ["apples"]
    /// } catch {
    ///     // A QueueSafeValueError prints what went wrong and the rule it broke.
    ///     print(error)
    /// }
    /// ```
    /// - Parameters:
    ///   - file: The caller's file, for the debug-build reports (see ``QueueSafeWaitCommand``).
    ///   - line: The caller's line, for those reports.
    /// - Returns: A copy of the value.
    /// - Throws: ``QueueSafeValueError`` if the command did not run, such as
    ///   ``QueueSafeValueError/reentrantWait`` when issued from inside a command of the same value.
    @available(
        *,
        noasync,
        message:
            "QueueSafeValue's wait commands block the calling thread; in async code use the suspend schedule: `try await value.suspend.lowestPriority.read()` (top-level code with an `await` anywhere is async code too)"
    )
    @inlinable
    public func read(file: StaticString = #fileID, line: UInt = #line) throws(QueueSafeValueError) -> Value {
        try self.performCombinable(.get, .get, file: file, line: line).get()
    }

    /// Runs `completion` with the value while holding it.
    ///
    /// - Parameters:
    ///   - completion: Runs on the calling thread, inside the command's critical section, with the value or
    ///     why the command did not run. `nil` does nothing.

    ///   - file: The caller's file, for the debug-build reports (see ``QueueSafeWaitCommand``).
    ///   - line: The caller's line, for those reports.
    @available(
        *,
        noasync,
        message:
            "QueueSafeValue's wait commands block the calling thread; in async code use the suspend schedule: `await value.suspend.lowestPriority.get()` (top-level code with an `await` anywhere is async code too)"
    )
    @inlinable
    public func get(
        completion: ((Result<Value, QueueSafeValueError>) -> Void)?,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        guard let completion else { return }
        let result = self.perform(.get, file: file, line: line) { value in completion(.success(value)) }
        if case .failure(let error) = result {
            completion(.failure(error))
        }
    }

    /// Runs `manualCompletion` with the value, and holds the value until it calls `done`.
    ///
    /// The command ends when `done` has been called and the closure has returned, whichever is later; `done` may be
    /// called later, from any thread. This call returns once the command has ended. A command that fails (its
    /// holder is gone, or it would re-enter) calls the closure with the failure and returns without waiting for
    /// `done`.
    /// - Parameters:
    ///   - manualCompletion: Runs on the calling thread. `nil` does nothing.
    ///   - file: The caller's file, for the debug-build reports (see ``QueueSafeWaitCommand``).
    ///   - line: The caller's line, for those reports.
    @available(
        *,
        noasync,
        message:
            "QueueSafeValue's wait commands block the calling thread; in async code use the async schedule: `value.async(performIn: queue).lowestPriority.get(manualCompletion:)` (top-level code with an `await` anywhere is async code too)"
    )
    @inlinable
    public func get(
        manualCompletion: ((Result<Value, QueueSafeValueError>, @escaping CommandCompletionClosure) -> Void)?,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        guard let manualCompletion else { return }
        let result = self.performManually(.getManually, file: file, line: line) { value, done in
            manualCompletion(.success(value), done)
        }
        if case .failure(let error) = result {
            manualCompletion(.failure(error), {})
        }
    }

    /// Replaces the value.
    ///
    /// When it has to wait, the command passes no closure, so the command that releases the value may apply it
    /// for this thread (flat combining), in its place in the queue. This call returns once the new value is in
    /// place either way, and the replaced value is destroyed on the calling thread, never on the releaser's.
    ///
    /// - Parameters:
    ///   - newValue: The new value.
    ///   - file: The caller's file, for the debug-build reports (see ``QueueSafeWaitCommand``).
    ///   - line: The caller's line, for those reports.
    /// - Returns: The updated value, or why the command did not run.
    @available(
        *,
        noasync,
        message:
            "QueueSafeValue's wait commands block the calling thread; in async code use the suspend schedule: `await value.suspend.lowestPriority.set(newValue:)` (top-level code with an `await` anywhere is async code too)"
    )
    @discardableResult
    @inlinable
    @inline(__always)
    public func set(
        newValue: Value,
        file: StaticString = #fileID,
        line: UInt = #line
    ) -> Result<Value, QueueSafeValueError> {
        self.performCombinable(.setNewValue, .set(newValue), file: file, line: line)
    }

    /// Changes the value in place.
    ///
    /// `value.wait.lowestPriority.set { $0 += 1 }` is an access: the closure is the command.
    /// - Parameters:
    ///   - completion: The access closure; runs on the calling thread with the value `inout`.
    ///   - file: The caller's file, for the debug-build reports (see ``QueueSafeWaitCommand``).
    ///   - line: The caller's line, for those reports.
    /// - Returns: The updated value, or why the command did not run (a `nil` closure gives
    ///   ``QueueSafeValueError/commandClosureDeallocated``).
    @available(
        *,
        noasync,
        message:
            "QueueSafeValue's wait commands block the calling thread; in async code use the suspend schedule: `await value.suspend.lowestPriority.set { … }` (top-level code with an `await` anywhere is async code too)"
    )
    @discardableResult
    @inlinable
    public func set(
        completion: ((inout Value) -> Void)?,
        file: StaticString = #fileID,
        line: UInt = #line
    ) -> Result<Value, QueueSafeValueError> {
        self.perform(.set, requiring: completion, file: file, line: line) { value, access in
            access(&value)
            return value
        }
    }

    /// Changes the value in place, and holds it until the closure calls `done`.
    ///
    /// The command ends when `done` has been called and the closure has returned, whichever is later; no other
    /// command of this value runs before. This call returns once the command has ended.
    /// - Parameters:
    ///   - manualCompletion: Runs on the calling thread with the value `inout` and `done`.
    ///   - file: The caller's file, for the debug-build reports (see ``QueueSafeWaitCommand``).
    ///   - line: The caller's line, for those reports.
    /// - Returns: The updated value, or why the command did not run (a `nil` closure gives
    ///   ``QueueSafeValueError/commandClosureDeallocated``).
    @available(
        *,
        noasync,
        message:
            "QueueSafeValue's wait commands block the calling thread; in async code use the async schedule: `value.async(performIn: queue).lowestPriority.set(manualCompletion:)` (top-level code with an `await` anywhere is async code too)"
    )
    @discardableResult
    @inlinable
    public func set(
        manualCompletion: ((inout Value, @escaping CommandCompletionClosure) -> Void)?,
        file: StaticString = #fileID,
        line: UInt = #line
    ) -> Result<Value, QueueSafeValueError> {
        guard let manualCompletion else { return self.failure(or: .commandClosureDeallocated) }
        return self.performManually(.setManually, file: file, line: line) { value, done in
            manualCompletion(&value, done)
        }
    }

    /// Computes something from the value while holding it.
    ///
    /// With a `nil` closure, spell the type out: `map(completion: nil as ((Int) -> String)?)`.
    /// - Parameters:
    ///   - completion: The transform; runs on the calling thread.
    ///   - file: The caller's file, for the debug-build reports (see ``QueueSafeWaitCommand``).
    ///   - line: The caller's line, for those reports.
    /// - Returns: What the transform returned, or why the command did not run (a `nil` closure gives
    ///   ``QueueSafeValueError/commandClosureDeallocated``).
    @available(
        *,
        noasync,
        message:
            "QueueSafeValue's wait commands block the calling thread; in async code use the suspend schedule: `await value.suspend.lowestPriority.map { … }` (top-level code with an `await` anywhere is async code too)"
    )
    @inlinable
    public func map<Transformed>(
        completion: ((Value) -> Transformed)?,
        file: StaticString = #fileID,
        line: UInt = #line
    ) -> Result<Transformed, QueueSafeValueError> {
        self.perform(.map, requiring: completion, file: file, line: line) { value, transform in transform(value) }
    }

    // MARK: Running

    /// The error that stops the command before it runs, if any: the holder's absence, then re-entry.
    ///
    /// Straight-line code on the storage the command already holds, so that the uncontended command neither retains
    /// it again nor builds a closure context.
    @inlinable
    var refusal: QueueSafeValueError? {
        if !self.storage.engine.isHolderAlive { return .valueContainerDeinited }
        if self.storage.engine.isReentrantOnCurrentThread { return .reentrantWait }
        return nil
    }

    @inlinable
    func failure<Success>(or error: QueueSafeValueError) -> Result<Success, QueueSafeValueError> {
        .failure(!self.storage.engine.isHolderAlive ? .valueContainerDeinited : error)
    }

    /// Runs `body` holding the value.
    ///
    /// `file` and `line` are the caller's, for the debug-build checks: a `wait` from inside a Swift concurrency task
    /// blocks a thread of the cooperative pool, and the turn joins the lock-order graph as a lock.
    @inlinable
    func perform<Success>(
        _ form: WaitCommandForm,
        file: StaticString,
        line: UInt,
        _ body: (inout Value) -> Success
    ) -> Result<Success, QueueSafeValueError> {
        if let refusal = self.refusal { return .failure(refusal) }
        let engine = self.storage.engine
        self.willAcquire(file: file, line: line)
        guard self.acquire(form, file: file, line: line) else { return .failure(.valueContainerDeinited) }
        LockOrderChecker.didAcquire(self.storage.lockOrder, file: file, line: line)
        defer {
            LockOrderChecker.didRelease(self.storage.lockOrder)
            engine.release()?.grant()
        }
        return .success(self.storage.runClosure(at: PackedSite.pack(file: file, line: line), body))
    }

    /// Runs a command that passes no closure: as ``perform(_:file:line:_:)`` when the value is free; when it is
    /// held, the command queues with what it must do, and the holder that releases the turn may apply it for this
    /// thread (``CombinedCommand``) instead of waking it to do it.
    @inlinable
    @inline(__always)
    func performCombinable(
        _ form: WaitCommandForm,
        _ operation: CombinedValueCommand<Value>.Operation,
        file: StaticString,
        line: UInt
    ) -> Result<Value, QueueSafeValueError> {
        if let refusal = self.refusal { return .failure(refusal) }
        let storage = self.storage
        self.willAcquire(file: file, line: line)
        if !storage.engine.tryAcquire(), let settled = self.combineInLine(form, operation, file: file, line: line) {
            return settled
        }
        LockOrderChecker.didAcquire(storage.lockOrder, file: file, line: line)
        defer {
            LockOrderChecker.didRelease(storage.lockOrder)
            storage.engine.release()?.grant()
        }
        return .success(
            storage.runClosure(at: PackedSite.pack(file: file, line: line)) { value in operation.apply(to: &value) }
        )
    }

    /// The turn is held: queues a command that does `operation`, and waits.
    ///
    /// The wait is a blocking call to the report of one made from inside a task and to the main-queue doctor.
    /// Returns the command's result if a releaser applied it or the value is gone; `nil` once the caller holds the
    /// turn and must run `operation` itself.
    ///
    /// Out of line, so that the fast path inlined into callers stays small.
    @usableFromInline
    func combineInLine(
        _ form: WaitCommandForm,
        _ operation: CombinedValueCommand<Value>.Operation,
        file: StaticString,
        line: UInt
    ) -> Result<Value, QueueSafeValueError>? {
        let command = CombinedValueCommand(storage: self.storage, operation: operation)
        let combining = BlockingCallCheck.blocking(self.blockingCall(form, file: file, line: line)) {
            self.storage.engine.combineBlocking(
                command,
                priority: self.priority,
                as: self.blockingCall(form, file: file, line: line)
            )
        }
        switch combining {
        case .holdsTurn: return nil
        case .applied: return .success(command.takeResult())
        case .valueDestroyed: return .failure(.valueContainerDeinited)
        }
    }

    /// How the report of a blocking call from inside a task, and the main-queue doctor, name the `wait` command
    /// `form` made at `file`:`line`: the command itself, and the same command on the schedule that does not block.
    @usableFromInline
    func blockingCall(_ form: WaitCommandForm, file: StaticString, line: UInt) -> BlockingCall {
        let call = form.call(at: self.priority)
        return BlockingCall(api: call.api, alternative: call.alternative, file: file, line: line)
    }

    /// The debug-build check before a `wait` command blocks: the lock order. (A call from inside a task is reported
    /// where it parks: in ``acquireInLine(_:file:line:)``, or while it waits for `done`.)
    @inlinable
    func willAcquire(file: StaticString, line: UInt) {
        LockOrderChecker.willAcquire(self.storage.lockOrder, file: file, line: line)
    }

    /// Takes the value's turn, blocking the calling thread until it is handed over if it is held.
    ///
    /// - Returns: `false` if the value was destroyed first (its holder is gone): the caller does not hold the turn.
    @inlinable
    func acquire(_ form: WaitCommandForm, file: StaticString, line: UInt) -> Bool {
        self.storage.engine.tryAcquire() || self.acquireInLine(form, file: file, line: line)
    }

    /// The turn is held: waits in line for it, a blocking call to the report of one made from inside a task and to
    /// the main-queue doctor.
    @usableFromInline
    func acquireInLine(_ form: WaitCommandForm, file: StaticString, line: UInt) -> Bool {
        BlockingCallCheck.blocking(self.blockingCall(form, file: file, line: line)) {
            self.storage.engine.acquireBlockingSlowly(
                self.priority,
                as: self.blockingCall(form, file: file, line: line)
            )
        }
    }

    @inlinable
    func perform<Closure, Success>(
        _ form: WaitCommandForm,
        requiring closure: Closure?,
        file: StaticString,
        line: UInt,
        _ body: (inout Value, Closure) -> Success
    ) -> Result<Success, QueueSafeValueError> {
        guard let closure else { return self.failure(or: .commandClosureDeallocated) }
        return self.perform(form, file: file, line: line) { value in body(&value, closure) }
    }

    /// Runs `body` holding the value, then waits for its `done` before releasing the value.
    @inlinable
    func performManually(
        _ form: WaitCommandForm,
        file: StaticString,
        line: UInt,
        _ body: (inout Value, @escaping CommandCompletionClosure) -> Void
    ) -> Result<Value, QueueSafeValueError> {
        if let refusal = self.refusal { return .failure(refusal) }
        let storage = self.storage
        self.willAcquire(file: file, line: line)
        guard self.acquire(form, file: file, line: line) else { return .failure(.valueContainerDeinited) }
        LockOrderChecker.didAcquire(storage.lockOrder, file: file, line: line)
        defer {
            LockOrderChecker.didRelease(storage.lockOrder)
            storage.engine.release()?.grant()
        }
        let ended = CountingSemaphore(.barrier)
        let latch = CompletionLatch { ended.signal() }
        storage.runClosure(at: PackedSite.pack(file: file, line: line)) { value in body(&value, latch.done) }
        // Noted before the closure's arrival, which may end the command and let the next one note its own.
        if !latch.isDone { storage.watchCompletion(latch, schedule: "wait", file: file, line: line) }
        latch.closureReturned()
        ended.wait(as: self.blockingCall(form, file: file, line: line))
        return .success(storage.current)
    }
}

extension QueueSafeWaitCommand: Sendable where Value: Sendable {}
