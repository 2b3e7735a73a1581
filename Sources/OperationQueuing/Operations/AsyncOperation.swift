import AtomicPrimitives
import Foundation

/// A ``ConcurrentOperation`` whose work is an `async throws` body: each attempt runs the body in a task and ends
/// when the body returns or throws.
///
/// ```swift
/// import OperationQueuing
///
/// let queuer = Queuer(name: "uploads", maxConcurrentOperationCount: 2)
/// let upload = AsyncOperation(name: "upload") { _ in
///     try await client.upload(file)  // here: fails once, then succeeds
/// }
/// upload.retryPolicy = .constant(.milliseconds(10))
/// queuer.addOperation(upload)
/// await queuer.waitForAll()
/// print(upload.currentAttempt, upload.success, upload.error == nil)  // 2 true true
/// ```
///
/// - An attempt that returns succeeds; one that throws fails, and its error is ``ConcurrentOperation/error``. A failed
///   attempt is retried as any ``ConcurrentOperation``'s: up to ``ConcurrentOperation/maximumAttempts`` attempts in
///   all, after the ``ConcurrentOperation/retryPolicy`` delay, or when ``ConcurrentOperation/retry()`` is called;
///   unless ``ConcurrentOperation/shouldRetry`` refuses the error, which ends the operation at once.
/// - ``cancel()`` cancels the running attempt's task, so the body sees `Task.isCancelled` and its awaits throw
///   `CancellationError`; no further attempt starts.
/// - The operation holds its place in its queue, and counts against the queue's concurrency limit, until the body
///   has returned, but holds no thread while the body is suspended.
///
/// The body runs in a task of its own, with the priority that matches the operation's `qualityOfService`; the task
/// starts on the operation's thread, and moves to the global concurrent pool at its first suspension. It is
/// `@Sendable` and runs with the isolation it states, never its creator's by itself: from a `@MainActor` type,
/// `AsyncOperation { @MainActor _ in self.count += 1 }` runs on the main actor and may touch the type's state. This is
/// the package's isolation rule, in "Isolation" of the async guide (Docs/AsyncCode.md).
/// ``ConcurrentOperation/manualFinish`` is always `true`: the body's end is the attempt's end; setting it to `false`
/// traps.
open class AsyncOperation: ConcurrentOperation, @unchecked Sendable {
    private struct Attempt {
        var task: Task<Void, Never>?
        /// Whether ``cancel()`` was called: read with the task recorded, so that neither misses the other.
        var isCancelled = false
        /// The number of the last attempt whose body has ended: a task is kept only while its body runs, so a
        /// finished operation holds no task.
        var ended = 0
    }

    // Safety: the running task is in an AtomicBox; the attempt numbers come from ConcurrentOperation's state
    // machine, and the last error is ConcurrentOperation's.
    private let attempt = AtomicBox(Attempt())
    private let body: nonisolated(nonsending) @Sendable (AsyncOperation) async throws -> Void

    /// Creates an operation that runs `body` in each attempt.
    ///
    /// - Parameters:
    ///   - name: The operation's name, for logs and debugging.
    ///   - body: The work of one attempt; it gets the operation, to read ``ConcurrentOperation/currentAttempt``.
    ///     Returning ends the attempt successfully; throwing ends it unsuccessfully. It runs with the isolation it
    ///     states: `{ @MainActor operation in … }` runs on the main actor.
    public init(
        name: String? = nil,
        body: nonisolated(nonsending) @escaping @Sendable (AsyncOperation) async throws -> Void
    ) {
        self.body = body
        super.init(name: name)
        super.manualFinish = true
    }

    /// Always `true`, since an attempt ends when its body returns or throws.
    ///
    /// - Precondition: A new value is `true`; `false` traps with a message naming the operation, since the body's
    ///   end, not ``execute()``'s return, ends an attempt.
    override open var manualFinish: Bool {
        get { true }
        set {
            guarantee(
                newValue,
                "AsyncOperation '\(self.name ?? "unnamed")': manualFinish is always true, since an attempt ends when "
                    + "its body returns or throws; it cannot be set to false"
            )
        }
    }

    /// Runs one attempt: starts a task that runs the body, then ends the attempt with its outcome.
    ///
    /// The task starts at once on the operation's thread (`Task.immediate`), so that a body that does not suspend
    /// costs no hop to another thread; after its first suspension it goes on in the global concurrent pool.
    override open func execute() {
        let priority = TaskPriority(self.qualityOfService)
        let number = self.attemptBeingExecuted
        // The task captures only `self`, which then serves as the closure's context: no allocation for it.
        let task: Task<Void, Never>
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            task = Task.immediate(priority: priority) { await self.runAttempt() }
        } else {
            task = Task(priority: priority) { await self.runAttempt() }
        }
        let cancelled = self.attempt.mutate { attempt -> Bool in
            // A body that did not suspend has ended already, and a retry may have started since.
            if attempt.ended < number { attempt.task = task }
            return attempt.isCancelled
        }
        if cancelled { task.cancel() }  // a cancel() that came before the task was recorded
    }

    /// Runs the body and ends the attempt with its outcome, on the executor of the task that runs it.
    private nonisolated(nonsending) func runAttempt() async {
        // Read before the body can suspend; the next attempt starts only after this one has ended.
        let number = self.attemptBeingExecuted
        do {
            try await self.body(self)
            self.end(number)
            self.endAttempt(number, success: true)
        } catch {
            self.end(number)
            self.endAttempt(number, success: false, error: error)
        }
    }

    /// Records the end of attempt `number`'s body, and lets its task go.
    private func end(_ number: Int) {
        self.attempt.mutate { attempt in
            attempt.ended = number
            attempt.task = nil
        }
    }

    /// Traps: an ``AsyncOperation``'s attempt ends only when its body returns or throws.
    ///
    /// A `finish` from the body would end the attempt while the body still runs, and start the next one beside it.
    /// - Parameter success: Unused.
    /// - Precondition: Never met; return from the body, or throw.
    override open func finish(success: Bool = true) {
        self.misusedFinish()
    }

    /// Traps: an ``AsyncOperation``'s attempt ends only when its body returns or throws.
    ///
    /// - Parameters:
    ///   - attempt: Unused.
    ///   - success: Unused.
    /// - Precondition: Never met; return from the body, or throw.
    override open func finish(attempt: Int, success: Bool = true) {
        self.misusedFinish()
    }

    /// Traps: an ``AsyncOperation``'s attempt ends only when its body returns or throws.
    ///
    /// Throw the error from the body instead: ``ConcurrentOperation/shouldRetry`` sees it there.
    /// - Parameter error: Unused.
    /// - Precondition: Never met; return from the body, or throw.
    override open func finish(throwing error: any Error) {
        self.misusedFinish()
    }

    /// Traps: an ``AsyncOperation``'s attempt ends only when its body returns or throws.
    ///
    /// - Parameters:
    ///   - attempt: Unused.
    ///   - error: Unused.
    /// - Precondition: Never met; return from the body, or throw.
    override open func finish(attempt: Int, throwing error: any Error) {
        self.misusedFinish()
    }

    private func misusedFinish() -> Never {
        halt(
            "AsyncOperation '\(self.name ?? "unnamed")': finish was called; an AsyncOperation's attempt ends only "
                + "when its body returns (success) or throws (failure)"
        )
    }

    /// Cancels the operation and the running attempt's task.
    ///
    /// See ``ConcurrentOperation/cancel()``: no further attempt starts, and one waiting to retry finishes at once.
    override open func cancel() {
        super.cancel()
        let task = self.attempt.mutate { attempt -> Task<Void, Never>? in
            attempt.isCancelled = true
            return attempt.task
        }
        task?.cancel()
    }
}

extension TaskPriority {
    /// The task priority that matches an operation's quality of service.
    fileprivate init(_ qualityOfService: QualityOfService) {
        switch qualityOfService {
        case .userInteractive, .userInitiated: self = .userInitiated
        case .utility: self = .utility
        case .background: self = .background
        case .default: self = .medium
        @unknown default: self = .medium
        }
    }
}
