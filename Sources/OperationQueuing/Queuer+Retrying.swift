extension Queuer {
    /// Runs an `async` body under this queue's concurrency limit, retrying it as `retries` says, and returns the value
    /// of the first attempt that returns.
    ///
    /// ```swift
    /// import OperationQueuing
    ///
    /// struct Offline: Error {}
    /// struct NotFound: Error {}
    ///
    /// let api = Queuer(name: "api", maxConcurrentOperationCount: 4)
    /// let retries = RetryConfiguration(
    ///     maximumAttempts: 4,
    ///     policy: .exponential(initial: .milliseconds(10), maximum: .seconds(1), jitter: 0.2),
    ///     shouldRetry: { error, _ in !(error is NotFound) }  // another attempt cannot find it
    /// )
    /// let tries = AtomicBox(0)
    /// let page = try await api.run(retrying: retries) {
    ///     let attempt = tries.mutate { count in
    ///         count += 1
    ///         return count
    ///     }
    ///     if attempt < 3 { throw Offline() }  // fails twice
    ///     return "page \(attempt)"
    /// }
    /// print(page)  // page 3
    /// ```
    ///
    /// Each attempt is an operation of this queue, as one ``run(_:)`` call is: it waits for a slot, counts against
    /// ``maxConcurrentOperationCount`` while the body runs, and leaves the queue when the body has returned or
    /// thrown. Between two attempts the call waits in the calling task, on `clock`, for the ``RetryPolicy`` delay:
    /// the wait holds no slot and no thread, so other work runs meanwhile, and the retry then queues behind the work
    /// added in the meantime. (An ``AsyncOperation`` with a ``ConcurrentOperation/retryPolicy``, by contrast, keeps
    /// its slot through its delays.)
    ///
    /// After an attempt throws, the call throws that error unless another attempt may follow: attempts remain
    /// (``RetryConfiguration/maximumAttempts`` in all), ``RetryConfiguration/shouldRetry`` accepts the error, and the
    /// ``RetryConfiguration/budget``, if any, holds a retry. So the error a call throws is always its last
    /// attempt's.
    ///
    /// Cancelling the awaiting task cancels the call at once, as it does ``run(_:)``: while an attempt waits for its
    /// slot, the call throws `CancellationError` and the body never runs; during the delay between attempts, the
    /// wait on `clock` ends at once (its timer goes with it) and the call throws `CancellationError`; while the body
    /// runs, its task is cancelled, and the call returns what that attempt returns, or throws what it throws, with
    /// no further attempt. An attempt cancelled by ``cancelAll()`` is not retried either.
    ///
    /// The body follows ``run(_:)``'s isolation rule: it is `@Sendable` and runs with the isolation it states, so
    /// from a `@MainActor` type `{ @MainActor in … }` runs each attempt on the main actor. The delays and
    /// `shouldRetry` run in the calling task.
    ///
    /// - Parameters:
    ///   - retries: How many attempts, how far apart, which errors and which budget.
    ///   - clock: The clock on which the delays pass: `ContinuousClock` by default; a test passes one it moves
    ///     itself, such as `ConcurrencyKitTesting`'s `TestClock`.
    ///   - body: The work of one attempt; each attempt runs it in a task of its own.
    /// - Returns: What the first attempt that returns returns.
    /// - Throws: What the last attempt threw; `CancellationError` if the call was cancelled before an attempt
    ///   started or between two attempts, or an attempt's operation was cancelled (by ``cancelAll()``) before its
    ///   body started.
    public func run<Value: Sendable>(
        retrying retries: RetryConfiguration,
        clock: some Clock<Duration> = ContinuousClock(),
        _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        retries.budget?.recordCall()
        var attempt = 1
        // Whether this attempt is a retry paid for with a token of the budget.
        var paidRetry = false
        while true {
            let call = RunCall<Value>()
            do {
                return try await self.runAttempt(call, body)
            } catch {
                // A retry whose body never ran (cancelled while it waited for its slot, or by `cancelAll()` first)
                // costs the budget nothing.
                if paidRetry && !call.bodyRan { retries.budget?.returnRetry() }
                guard call.failedUncancelled, !Task.isCancelled, attempt < retries.maximumAttempts,
                    retries.shouldRetry?(error, attempt) ?? true, retries.budget?.withdrawRetry() ?? true
                else { throw error }
                paidRetry = retries.budget != nil
                let delay = retries.policy.delay(beforeRetry: attempt, jitterSeed: retries.jitterSeed)
                if delay > .zero {
                    do {
                        try await RetryTimer.sleep(for: delay, on: clock)
                    } catch {
                        // The back-off ended early (cancelled): the retry never happens, nor costs the budget.
                        retries.budget?.returnRetry()
                        throw error
                    }
                }
                attempt += 1
            }
        }
    }
}
