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
/// await queuer.waitUntilAllOperationsAreFinished()
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
        Self.checkConcurrency(maxConcurrentOperationCount)
        self.queue = OperationQueue()
        self.queue.name = name
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
            Self.checkConcurrency(newValue)
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
    /// The body makes one attempt. Cancelling the awaiting task cancels the operation: before it starts, the body
    /// never runs; while it runs, the body's task is cancelled.
    ///
    /// - Parameter body: The work; it runs in a task of its own.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `CancellationError` if the operation was cancelled before the body ran.
    public func run<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let value = AtomicBox<Value?>(nil)
        let operation = AsyncOperation(name: "Queuer.run") { _ in
            let result = try await body()
            value.mutate { $0 = result }
        }
        operation.maximumRetries = 1
        return try await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                operation.completionBlock = { continuation.resume() }
                self.addOperation(operation)
            }
            if let result = value.value { return result }
            throw operation.error ?? CancellationError()
        } onCancel: {
            operation.cancel()
        }
    }

    /// Adds an operation.
    ///
    /// - Parameter operation: The operation, not yet added to any queue.
    /// - Precondition: A ``ConcurrentOperation`` was not added to a Queuer, a chain or a ``GroupOperation`` before.
    public func addOperation(_ operation: Operation) {
        (operation as? ConcurrentOperation)?.claim(by: "Queuer.addOperation")
        self.queue.addOperation(operation)
    }

    /// Adds operations that run one after another, in array order, and then `completionHandler`.
    ///
    /// Each operation starts after the one before it has finished — also when that one was cancelled. An empty
    /// chain's completion handler still runs.
    /// - Parameters:
    ///   - operations: The chain, in order.
    ///   - completionHandler: Runs after the last operation.
    /// - Precondition: No operation is listed twice (it would wait for itself), and no ``ConcurrentOperation`` was
    ///   added to a Queuer, a chain or a ``GroupOperation`` before.
    public func addChainedOperations(_ operations: [Operation], completionHandler: (@Sendable () -> Void)? = nil) {
        var positions: [ObjectIdentifier: Int] = [:]
        for (index, operation) in operations.enumerated() {
            if let first = positions.updateValue(index, forKey: ObjectIdentifier(operation)) {
                preconditionFailure(
                    "Queuer.addChainedOperations: the operation at index \(index) ('\(operation.name ?? "unnamed")') "
                        + "is also at index \(first); a chain cannot run an operation twice"
                )
            }
            (operation as? ConcurrentOperation)?.claim(by: "Queuer.addChainedOperations")
        }
        var chain = operations
        for (previous, next) in zip(operations, operations.dropFirst()) {
            next.addDependency(previous)
        }
        if let completionHandler {
            let completion = BlockOperation(block: completionHandler)
            if let last = operations.last { completion.addDependency(last) }
            chain.append(completion)
        }
        self.queue.addOperations(chain, waitUntilFinished: false)
    }

    /// Adds operations that run one after another, in order, and then `completionHandler`.
    ///
    /// - Parameters:
    ///   - operations: The chain, in order.
    ///   - completionHandler: Runs after the last operation.
    public func addChainedOperations(_ operations: Operation..., completionHandler: (@Sendable () -> Void)? = nil) {
        self.addChainedOperations(operations, completionHandler: completionHandler)
    }

    /// Adds a block that runs after every operation added before it has finished.
    ///
    /// - Parameter completionHandler: The block; it is an operation of this queue, so ``cancelAll()`` cancels it.
    public func addCompletionHandler(_ completionHandler: @escaping @Sendable () -> Void) {
        let completion = BlockOperation(block: completionHandler)
        for operation in self.queue.operations { completion.addDependency(operation) }
        self.queue.addOperation(completion)
    }

    // MARK: Controlling

    /// Cancels every queued and running operation, completion handlers included.
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
    public func waitUntilAllOperationsAreFinished() {
        self.queue.waitUntilAllOperationsAreFinished()
    }

    /// Suspends the calling task, without blocking a thread, until every operation added so far has finished.
    public func waitUntilAllOperationsAreFinished() async {
        let operations = self.queue.operations
        guard !operations.isEmpty else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = BlockOperation { continuation.resume() }
            for operation in operations { finished.addDependency(operation) }
            Self.waiters.addOperation(finished)
        }
    }

    /// Runs the operations that resume `await`ing callers, outside every queue's concurrency limit.
    private static let waiters = OperationQueue()

    private static func checkConcurrency(_ count: Int) {
        precondition(
            count >= 1 || count == OperationQueue.defaultMaxConcurrentOperationCount,
            "Queuer: maxConcurrentOperationCount must be 1 or more, or OperationQueue.defaultMaxConcurrentOperationCount; got \(count)"
        )
    }
}
