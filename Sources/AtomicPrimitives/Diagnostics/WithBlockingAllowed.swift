/// Runs `body` with the check for blocking calls inside tasks switched off for the current task.
///
/// In debug builds ConcurrencyKit reports a call that blocks its thread from inside a Swift concurrency task (see
/// <doc:FindingDeadlocks>), and in trap mode stops the process there. Swift Testing runs even a synchronous `@Test`
/// inside a task, so a test that means to block — to check a blocking API, say — is reported too. Wrap that part:
///
/// ```swift
/// import AtomicPrimitives
///
/// let semaphore = CountingSemaphore(.binary)
/// let answer = withBlockingAllowed {
///     semaphore.perform { 42 }  // not reported if it has to wait, even in trap mode
/// }
/// print(answer)  // 42
/// ```
///
/// The allowance is a task-local value: it holds for the code `body` runs on the current task, and for child tasks
/// made inside it (`async let`, task groups), but not for other tasks, other threads, or after `body` returns. Lock-
/// order reports are not affected.
///
/// - Parameter body: The code that may block.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws.
public func withBlockingAllowed<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result
{
    try BlockingCallCheck.allowing(body)
}

/// Runs the async `body` with the check for blocking calls inside tasks switched off for the current task and the
/// child tasks it makes; the async form of ``withBlockingAllowed(_:)``.
///
/// - Parameters:
///   - isolation: The caller's actor, where `body` runs; inferred.
///   - body: The code that may block.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws.
public func withBlockingAllowed<Result>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: () async throws -> Result
) async rethrows -> Result {
    try await BlockingCallCheck.allowing(body)
}
