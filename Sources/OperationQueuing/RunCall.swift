import AtomicPrimitives

/// One ``Queuer/run(_:)`` call, or one attempt of ``Queuer/run(retrying:clock:_:)``: its ``RunStateMachine`` and the
/// body's outcome, under one lock.
///
/// Each method takes the lock for one step of the state machine and resumes the caller, if that step says so,
/// after releasing it. The body's outcome is written once, when it ends, and read once, by the resumed caller.
final class RunCall<Value: Sendable>: @unchecked Sendable {
    // Safety: `machine`, `value`, `error` and `stopped` are only touched while `core` is locked. The outcome is two fields
    // rather than a `Result`, which would cost its generic metadata at each use in this unspecialised code.
    private let core = LockCore()
    private var machine = RunStateMachine()
    private var value: Value?
    private var error: (any Error)?
    /// Whether the body threw after its operation was cancelled.
    private var stopped = false

    /// The caller begins to wait.
    ///
    /// - Returns: Whether to queue the operation: `false` when the task was cancelled already, and the caller has
    ///   been resumed.
    func wait(_ continuation: RunStateMachine.Continuation) -> Bool {
        let cancelled = self.step { $0.wait(continuation) }
        cancelled?.resume()
        return cancelled == nil
    }

    /// The caller's task was cancelled: resumes the caller at once if the body has not started.
    func cancel() {
        self.step { $0.cancel() }?.resume()
    }

    /// Whether the body may run; `false` once the call was cancelled.
    func bodyStarts() -> Bool {
        self.step { $0.bodyStarts() }
    }

    /// Records what the body returned, and resumes the caller if the operation has finished already.
    func bodyReturned(_ value: Value) {
        self.step { machine in
            self.value = value
            return machine.bodyEnded()
        }?.resume()
    }

    /// Records what the body threw, and whether its operation was cancelled then, and resumes the caller if the
    /// operation has finished already.
    func bodyThrew(_ error: any Error, operationCancelled: Bool) {
        self.step { machine in
            self.error = error
            self.stopped = operationCancelled
            return machine.bodyEnded()
        }?.resume()
    }

    /// The operation has finished: resumes the caller unless it was resumed already or the body still runs.
    func operationFinished() {
        self.step { $0.operationFinished() }?.resume()
    }

    /// What the resumed caller returns: what the body returned.
    ///
    /// - Throws: What the body threw, or `CancellationError` if it never ran.
    func outcome() throws -> Value {
        self.core.lock(onReentry: { self.trapReentry() })
        defer { self.core.unlock() }
        if let value = self.value { return value }
        throw self.error ?? CancellationError()
    }

    /// Whether the body ran and threw while nobody had cancelled its operation: a failure that a retry may follow.
    ///
    /// `false` when the body never ran (the call or its operation was cancelled first) or was cancelled while it
    /// ran (by the caller's task or ``Queuer/cancelAll()``).
    var failedUncancelled: Bool {
        self.core.lock(onReentry: { self.trapReentry() })
        defer { self.core.unlock() }
        return self.error != nil && !self.stopped
    }

    /// Whether the body ran: it returned or threw.
    ///
    /// `false` when the call or its operation was cancelled before it started.
    var bodyRan: Bool {
        self.core.lock(onReentry: { self.trapReentry() })
        defer { self.core.unlock() }
        return self.value != nil || self.error != nil
    }

    private func step<Result>(_ body: (inout RunStateMachine) -> Result) -> Result {
        self.core.lock(onReentry: { self.trapReentry() })
        defer { self.core.unlock() }
        return body(&self.machine)
    }

    private func trapReentry() -> Never {
        halt("Queuer.run: a call's state was entered re-entrantly")
    }
}
