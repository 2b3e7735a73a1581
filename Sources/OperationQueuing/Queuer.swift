import AtomicPrimitives
import Foundation

/// A manager for an `OperationQueue`: blocks and operations, chains, completion handlers, pause and resume.
///
/// ```swift
/// import OperationQueuing
///
/// let queuer = Queuer(name: "downloads", maxConcurrentOperationCount: 4)
/// queuer.addOperation { download(first) }
/// queuer.addChainedOperations(fetch, parse, store) { print("stored") }
/// queuer.addCompletionHandler { print("everything above has finished") }
/// await queuer.waitForAll()
/// // Prints "stored"
/// // Prints "everything above has finished"
/// ```
///
/// Use a `Queuer` of your own per subsystem; ``shared`` is a convenience for scripts and demos.
public final class Queuer: Sendable {
    /// A queue for operations that do not need one of their own.
    public static let shared = Queuer(name: "Queuer")

    /// The underlying operation queue.
    public let queue: OperationQueue

    /// The name given at `init`, for the wait report, which must not take the operation queue's lock to read it.
    let nameAtInit: String

    /// `Queuer 'name'`, as traps name this Queuer: made once, as an operation is added far more often than a trap.
    private let label: String

    /// Creates a queue.
    ///
    /// - Parameters:
    ///   - name: The queue's name.
    ///   - maxConcurrentOperationCount: How many operations may run at once: 1 or more, or
    ///     `OperationQueue.defaultMaxConcurrentOperationCount` (the default) to let the system decide.
    ///   - qualityOfService: The quality of service of the queue's operations.
    /// - Precondition: `maxConcurrentOperationCount` is 1 or more, or the default constant.
    public init(
        name: String,
        maxConcurrentOperationCount: Int = OperationQueue.defaultMaxConcurrentOperationCount,
        qualityOfService: QualityOfService = .default
    ) {
        Self.checkConcurrency(maxConcurrentOperationCount, of: name)
        self.queue = OperationQueue()
        self.nameAtInit = name
        self.queue.name = name
        self.label = "Queuer '\(name)'"
        self.queue.maxConcurrentOperationCount = maxConcurrentOperationCount
        self.queue.qualityOfService = qualityOfService
    }

    // MARK: State

    /// How many operations are queued or running.
    public var operationCount: Int { self.queue.operationCount }

    /// The operations queued or running.
    public var operations: [Operation] { self.queue.operations }

    /// How many operations may run at once.
    ///
    /// - Precondition: A new value is 1 or more, or `OperationQueue.defaultMaxConcurrentOperationCount`.
    public var maxConcurrentOperationCount: Int {
        get { self.queue.maxConcurrentOperationCount }
        set {
            Self.checkConcurrency(newValue, of: self.queue.name)
            self.queue.maxConcurrentOperationCount = newValue
        }
    }

    /// The quality of service of the queue's operations.
    public var qualityOfService: QualityOfService {
        get { self.queue.qualityOfService }
        set { self.queue.qualityOfService = newValue }
    }

    /// Whether the queue starts operations, that is, is not paused.
    public var isExecuting: Bool { !self.queue.isSuspended }

    // MARK: Adding work

    /// Adds a block as an operation.
    ///
    /// - Parameter block: The work.
    public func addOperation(_ block: @escaping @Sendable () -> Void) {
        self.queue.addOperation(block)
    }

    /// Adds an `async` body as an ``AsyncOperation`` that makes one attempt.
    ///
    /// The body runs in a task of its own once the queue starts the operation, and the operation counts against
    /// ``maxConcurrentOperationCount`` until the body has returned or thrown. ``cancelAll()`` cancels the body's task.
    /// For retries, or to read the error, make an ``AsyncOperation`` and add it.
    ///
    /// The body runs elsewhere, so it is `@Sendable` and runs with the isolation it states: nonisolated unless it says
    /// otherwise, never the caller's by itself. From a `@MainActor` type, `{ @MainActor in … }` runs it on the main
    /// actor, where it may touch the type's state (a body that has no `await` is taken for a block of
    /// ``addOperation(_:)-(()->Void)``, which cannot be `@MainActor`: use ``run(_:)`` for it). This is the package's
    /// isolation rule, in "Isolation" of the async guide (Docs/AsyncCode.md).
    ///
    /// - Parameter body: The work.
    public func addOperation(_ body: @escaping @Sendable () async throws -> Void) {
        let operation = AsyncOperation { _ in try await body() }
        operation.maximumRetries = 1
        self.addOperation(operation)
    }

    /// Runs an `async` body as an operation of this queue, under its concurrency limit, and returns its value.
    ///
    /// ```swift
    /// import OperationQueuing
    ///
    /// let downloads = Queuer(name: "downloads", maxConcurrentOperationCount: 2)
    /// let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
    ///     for index in 1...6 {
    ///         group.addTask { try await downloads.run { index * 100 } }  // at most 2 bodies at once
    ///     }
    ///     var total = 0
    ///     for try await size in group { total += size }
    ///     return total
    /// }
    /// print(sizes)  // 2100
    /// ```
    ///
    /// The body makes one attempt. Cancelling the awaiting task cancels the call: before the body starts, the call
    /// throws `CancellationError` at once, also while the queue is paused or its slots are busy, and the body never
    /// runs (its operation finishes without it when the queue reaches it); while the body runs, the body's task is
    /// cancelled and the call returns what the body returns or throws.
    ///
    /// The body runs elsewhere, as an operation, so it is `@Sendable` and runs with the isolation it states:
    /// nonisolated unless it says otherwise, never the caller's by itself, so that work sent to a queue does not land
    /// on the main actor unasked. From a `@MainActor` type, `try await queuer.run { @MainActor in self.count += 1 }`
    /// runs it on the main actor, where it may touch the type's state; the operation holds its place in the queue
    /// meanwhile. Inline bodies, such as `CountingSemaphore.withPermit`'s, take the caller's isolation instead: the
    /// package's isolation rule, in "Isolation" of the async guide (Docs/AsyncCode.md).
    ///
    /// - Parameter body: The work; it runs in a task of its own.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `CancellationError` if the call was cancelled, or the operation cancelled
    ///   (by ``cancelAll()``), before the body started.
    public func run<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await self.runAttempt(RunCall(), body)
    }

    /// Runs `body` once as an operation, for `call`: all of ``run(_:)``, and each attempt of
    /// ``run(retrying:clock:_:)``.
    func runAttempt<Value: Sendable>(
        _ call: RunCall<Value>,
        _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let operation = AsyncOperation(name: "Queuer.run") { operation in
            guard call.bodyStarts() else { return }  // the call was cancelled: give up the place
            do {
                call.bodyReturned(try await body())
            } catch {
                call.bodyThrew(error, operationCancelled: operation.isCancelled)
                throw error
            }
        }
        operation.maximumRetries = 1
        operation.completionBlock = { call.operationFinished() }
        return try await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: RunStateMachine.Continuation) in
                if call.wait(continuation) { self.addOperation(operation) }
            }
            return try call.outcome()
        } onCancel: {
            operation.cancel()  // a queued operation then finishes without its body; a running one cancels its task
            call.cancel()
        }
    }

    /// Adds an operation.
    ///
    /// - Parameter operation: The operation, not yet added to any queue.
    /// - Precondition: A ``ConcurrentOperation`` was not added to a Queuer, a chain or a ``GroupOperation`` before.
    public func addOperation(_ operation: Operation) {
        (operation as? ConcurrentOperation)?.claim(by: self.claimant("addOperation"))
        self.queue.addOperation(operation)
    }

    /// Adds operations that run one after another, in array order, and then `completionHandler`.
    ///
    /// Each operation starts after every operation before it has finished — also when some of them were cancelled:
    /// a cancelled operation does not run, and the ones after it still wait for the ones before it. An empty
    /// chain's completion handler still runs.
    ///
    /// > Important: `completionHandler` is an operation of this queue, so ``cancelAll()`` cancels it, and it never
    /// > runs. For code that must run once the chain is over — finished or cancelled — write it after
    /// > `await waitForAll()`.
    /// - Parameters:
    ///   - operations: The chain, in order.
    ///   - completionHandler: Runs after every operation of the chain has finished; it is an operation of this
    ///     queue, so ``cancelAll()`` cancels it.
    /// - Precondition: No operation is listed twice (it would wait for itself), and no ``ConcurrentOperation`` was
    ///   added to a Queuer, a chain or a ``GroupOperation`` before.
    public func addChainedOperations(_ operations: [Operation], completionHandler: (@Sendable () -> Void)? = nil) {
        var positions: [ObjectIdentifier: Int] = [:]
        let caller = self.claimant("addChainedOperations")
        for (index, operation) in operations.enumerated() {
            if let first = positions.updateValue(index, forKey: ObjectIdentifier(operation)) {
                halt(
                    "\(caller.description): the operation at index \(index) ('\(operation.name ?? "unnamed")') is also at index "
                        + "\(first); a chain cannot run an operation twice"
                )
            }
            (operation as? ConcurrentOperation)?.claim(by: caller)
        }
        // A cancelled operation is ready at once, whatever it depends on, so a link cannot wait for its
        // predecessor alone. Gate k, on a private queue where nobody can cancel it, finishes once links 0...k have
        // (it waits for link k and gate k − 1), and link k + 1 waits for gate k only. So every link's dependents
        // are gates, which stay queued until they finish, and every gate keeps its dependent link until its own
        // finish has been processed: no dependency is ever left with a pointer to a released operation, whatever
        // the links' classes.
        var gates: [DependencyGate] = []
        for (index, operation) in operations.enumerated() {
            if index > 0 {
                operation.addDependency(gates[index - 1])
                gates[index - 1].keep(operation)
            }
            guard index < operations.count - 1 || completionHandler != nil else { break }
            var earlier: [Operation] = [operation]
            if let previous = gates.last { earlier.append(previous) }
            gates.append(DependencyGate(after: earlier))
        }
        var chain = operations
        if let completionHandler {
            let completion = BlockOperation(block: completionHandler)
            if let last = gates.last {
                completion.addDependency(last)
                last.keep(completion)
            }
            chain.append(completion)
        }
        Self.waiters.addOperations(gates, waitUntilFinished: false)
        self.queue.addOperations(chain, waitUntilFinished: false)
    }

    /// Adds operations that run one after another, in order, and then `completionHandler`.
    ///
    /// The variadic form of ``addChainedOperations(_:completionHandler:)-([Operation],_)``, with the same order.
    /// - Parameters:
    ///   - operations: The chain, in order.
    ///   - completionHandler: Runs after every operation of the chain has finished.
    public func addChainedOperations(_ operations: Operation..., completionHandler: (@Sendable () -> Void)? = nil) {
        self.addChainedOperations(operations, completionHandler: completionHandler)
    }

    /// Adds a block that runs after every operation added before it has finished.
    ///
    /// An operation cancelled before it started finishes at once without running; the block still waits for all
    /// the others.
    ///
    /// > Important: The block is an operation of this queue, so ``cancelAll()`` cancels it, and it never runs. For
    /// > code that must run once everything is over — finished or cancelled — write it after `await waitForAll()`
    /// > (or the blocking ``waitUntilAllOperationsAreFinished(file:line:)``), which returns once every operation
    /// > added so far has finished, cancelled ones included.
    /// - Parameter completionHandler: The block; it is an operation of this queue, so ``cancelAll()`` cancels it.
    public func addCompletionHandler(_ completionHandler: @escaping @Sendable () -> Void) {
        let completion = BlockOperation(block: completionHandler)
        let operations = self.queue.operations
        if !operations.isEmpty {
            // Through a gate, which keeps the completion until the operations have finished: cancelAll() makes the
            // completion finish early, and Foundation must not be left with a pointer to it once it is released.
            let gate = DependencyGate(after: operations)
            completion.addDependency(gate)
            gate.keep(completion)
            Self.waiters.addOperation(gate)
        }
        self.queue.addOperation(completion)
    }

    // MARK: Controlling

    /// Cancels every queued and running operation, completion handlers included.
    ///
    /// A cancelled completion handler (of ``addCompletionHandler(_:)`` or of a chain) never runs; `await
    /// waitForAll()` still returns once every operation has finished, and is the place for "done, finished or
    /// cancelled" code.
    public func cancelAll() {
        self.queue.cancelAllOperations()
    }

    /// Keeps pending operations from starting, and calls ``ConcurrentOperation/pause()`` on queued ones.
    public func pause() {
        self.queue.isSuspended = true
        for case let operation as ConcurrentOperation in self.queue.operations { operation.pause() }
    }

    /// Lets pending operations start again, and calls ``ConcurrentOperation/resume()`` on queued ones.
    public func resume() {
        for case let operation as ConcurrentOperation in self.queue.operations { operation.resume() }
        self.queue.isSuspended = false
    }

    /// Blocks the calling thread until every operation has finished.
    ///
    /// It is unavailable from async code: there, `await waitForAll()` suspends instead. In debug builds, a call from
    /// inside a task (through a synchronous function) that has to wait is reported once per call site (see
    /// `LockOrderChecking`); one that finds the queue empty is not, and `withBlockingAllowed { }` allows one.
    /// - Parameters:
    ///   - file: The caller's file, for that report.
    ///   - line: The caller's line, for that report.
    @available(
        *,
        noasync,
        message:
            "Queuer.waitUntilAllOperationsAreFinished() blocks the calling thread; in async code use `await queuer.waitForAll()` (top-level code with an `await` anywhere is async code too)"
    )
    public func waitUntilAllOperationsAreFinished(file: StaticString = #fileID, line: UInt = #line) {
        let call = BlockingCall(
            api: "Queuer.waitUntilAllOperationsAreFinished()",
            alternative: "await queuer.waitForAll()",
            file: file,
            line: line
        )
        // A queue with nothing in it is a look, not a wait: no report.
        guard self.queue.operationCount > 0 else { return }
        BlockingCallCheck.blocking(call, on: self) { self.queue.waitUntilAllOperationsAreFinished() }
    }

    /// Suspends the calling task, without blocking a thread, until every operation added so far has finished.
    ///
    /// The name has no blocking overload, so it suspends wherever it is written, also in the top-level code of a
    /// `main.swift`, where `await queuer.waitUntilAllOperationsAreFinished()` picks the blocking
    /// ``waitUntilAllOperationsAreFinished(file:line:)`` and does not compile.
    ///
    /// While it is suspended, the task shows in `WaitReport` as waiting for the Queuer, with `file` and `line`.
    ///
    /// - Parameters:
    ///   - file: Where the call is made, for `WaitReport`; leave the default.
    ///   - line: Where the call is made, for `WaitReport`; leave the default.
    public func waitForAll(file: StaticString = #fileID, line: UInt = #line) async {
        let operations = self.queue.operations
        guard !operations.isEmpty else { return }
        var parked: TaskWaitEntry?
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            parked = TaskWaits.begin(
                on: self,
                as: BlockingCall(api: "Queuer.waitForAll()", alternative: "", file: file, line: line)
            )
            let finished = BlockOperation { continuation.resume() }
            for operation in operations { finished.addDependency(operation) }
            Self.waiters.addOperation(finished)
        }
        if let parked { TaskWaits.end(parked) }
    }

    /// Suspends the calling task until every operation added so far has finished: the same as ``waitForAll(file:line:)``.
    ///
    /// In an `async` function this is the overload `await queuer.waitUntilAllOperationsAreFinished()` calls. In the
    /// top-level code of a `main.swift` that call picks the blocking ``waitUntilAllOperationsAreFinished(file:line:)``
    /// instead, and does not compile: write `await queuer.waitForAll()` there.
    public func waitUntilAllOperationsAreFinished() async {
        await self.waitForAll()
    }

    /// Runs the operations that only wait for others — the gates of chains and completion handlers, and the
    /// wake-ups of `await`ing callers — outside every queue's concurrency limit and pause, where no
    /// ``cancelAll()`` reaches them.
    private static let waiters = OperationQueue()

    /// How a trap names this Queuer and `method`, called on it: `Queuer 'downloads' (addOperation)`, with the name
    /// the Queuer was made with.
    private func claimant(_ method: StaticString) -> ConcurrentOperation.Claimant {
        ConcurrentOperation.Claimant(receiver: self.label, method: method)
    }

    private static func checkConcurrency(_ count: Int, of name: String?) {
        guarantee(
            count >= 1 || count == OperationQueue.defaultMaxConcurrentOperationCount,
            "Queuer '\(name ?? "unnamed")': maxConcurrentOperationCount must be 1 or more, or "
                + "OperationQueue.defaultMaxConcurrentOperationCount; got \(count)"
        )
    }
}

extension Queuer: WaitTarget {
    package var waitResource: WaitReport.Resource {
        WaitReport.Resource(
            type: "Queuer",
            name: self.queue.name,
            madeAt: nil,
            identity: WaitRecords.identity(of: self)
        )
    }

    /// A Queuer has no holder: a wait for it waits for its operations to finish. (Its operation count is behind
    /// Foundation's lock, which the report must not take.)
    package var waitHolding: WaitHolding {
        WaitHolding(state: "waits for its operations to finish")
    }
}
