/// How ``Queuer/run(retrying:clock:_:)`` retries: how many attempts in all, how long it waits between them, which
/// errors it retries, and the budget its retries draw from.
///
/// ```swift
/// import OperationQueuing
///
/// struct NotFound: Error {}
///
/// let retries = RetryConfiguration(
///     maximumAttempts: 4,
///     policy: .exponential(initial: .milliseconds(100), maximum: .seconds(2), jitter: 0.2),
///     shouldRetry: { error, _ in !(error is NotFound) }  // another attempt cannot find it
/// )
/// print(retries.maximumAttempts, retries.shouldRetry?(NotFound(), 1) == false)  // 4 true
/// ```
///
/// The same numbers and words as a ``ConcurrentOperation``'s: ``maximumAttempts`` is
/// ``ConcurrentOperation/maximumAttempts``, ``policy`` ``ConcurrentOperation/retryPolicy``, ``shouldRetry``
/// ``ConcurrentOperation/shouldRetry`` and ``jitterSeed`` ``ConcurrentOperation/retryJitterSeed``. A configuration is
/// a value: make one per kind of call and share it.
public struct RetryConfiguration: Sendable {
    /// The total number of attempts allowed, the first included: 3 by default.
    ///
    /// - Precondition: 1 or more; 0 or a negative number traps with a message naming the value.
    public var maximumAttempts: Int {
        didSet { Self.check(self.maximumAttempts) }
    }

    /// How long a call waits before each retry: ``RetryPolicy/immediate`` by default.
    ///
    /// The wait passes on the clock given to ``Queuer/run(retrying:clock:_:)``, and holds neither a place in the
    /// queue nor a thread.
    public var policy: RetryPolicy

    /// Decides whether an attempt that threw is retried: `nil` (the default) retries every error.
    ///
    /// It gets the error and the number of the attempt that threw, from 1, and returns `false` for an error that
    /// another attempt cannot cure: the call then throws that error at once. It is asked only when a retry would
    /// otherwise follow: not after the last attempt, nor once the call was cancelled. It runs in the calling task,
    /// before the ``budget`` is asked, so a refused error spends none of it.
    public var shouldRetry: (@Sendable (_ error: any Error, _ attempt: Int) -> Bool)?

    /// The budget that every call deposits into and every retry draws from; `nil` (the default) for none.
    ///
    /// A retry that finds the budget empty does not happen: the call throws its last error.
    public var budget: RetryBudget?

    /// The seed of the ``policy``'s jitter, so that the waits are exactly reproducible; `nil` (the default) draws
    /// them from the system's random numbers.
    ///
    /// With a seed, the wait before retry `n` is ``RetryPolicy/delay(beforeRetry:jitterSeed:)`` with that seed, in
    /// every call: leave it `nil` outside tests, or calls that fail together retry together.
    public var jitterSeed: UInt64?

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - maximumAttempts: The total number of attempts allowed, the first included; 1 or more.
    ///   - policy: How long to wait before each retry.
    ///   - budget: A budget shared by many calls, or `nil`.
    ///   - jitterSeed: The seed of the policy's jitter, or `nil` for the system's random numbers.
    ///   - shouldRetry: Whether an attempt that threw is retried, or `nil` to retry every error.
    /// - Precondition: `maximumAttempts` is 1 or more.
    public init(
        maximumAttempts: Int = 3,
        policy: RetryPolicy = .immediate,
        budget: RetryBudget? = nil,
        jitterSeed: UInt64? = nil,
        shouldRetry: (@Sendable (_ error: any Error, _ attempt: Int) -> Bool)? = nil
    ) {
        Self.check(maximumAttempts)
        self.maximumAttempts = maximumAttempts
        self.policy = policy
        self.budget = budget
        self.jitterSeed = jitterSeed
        self.shouldRetry = shouldRetry
    }

    private static func check(_ maximumAttempts: Int) {
        guarantee(
            maximumAttempts >= 1,
            "RetryConfiguration: maximumAttempts is the number of attempts in all, the first included, and must be 1 "
                + "or more, not \(maximumAttempts)"
        )
    }
}
