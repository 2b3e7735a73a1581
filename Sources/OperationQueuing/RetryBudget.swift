import AtomicPrimitives

/// A limit on retries shared by many calls, so that a failing service gets a few more attempts than calls, never
/// a multiple of them.
///
/// Retries multiply load at the worst moment: when every call fails, three attempts per call triple the traffic to a
/// service that is already down. A budget caps that. It is a token bucket, as Finagle's retry budget and gRPC's
/// retry throttling are: every call of ``Queuer/run(retrying:clock:_:)`` that names the budget deposits
/// ``retriesPerCall`` of a retry, every retry takes out a whole one, and a retry that finds less than one in the
/// budget does not happen: the call throws its last error instead. The budget holds at most ``capacity`` retries and
/// starts full, so the first failures of a quiet client are retried, and a long run of successes cannot save up a
/// storm of retries for the next outage.
///
/// Over any stretch of calls, the retries are at most `capacity + retriesPerCall × calls`: with the defaults, once
/// every call fails, about 1.1 attempts per call, whatever ``RetryConfiguration/maximumAttempts`` says.
///
/// ```swift
/// import OperationQueuing
///
/// struct Unavailable: Error {}
///
/// let budget = RetryBudget()  // 0.1 retry per call, at most 10 saved up
/// let retries = RetryConfiguration(maximumAttempts: 3, budget: budget)
/// let queuer = Queuer(name: "outage", maxConcurrentOperationCount: 4)
/// let attempts = AtomicBox(0)
/// for _ in 0..<1_000 {
///     _ = try? await queuer.run(retrying: retries) {
///         attempts.mutate { $0 += 1 }
///         throw Unavailable()  // the service is down
///     }
/// }
/// // 1,000 calls, and 109 retries: the 10 the budget held, and 99 that the calls earned.
/// print(attempts.value)  // 1109
/// ```
///
/// Share one budget between the calls to one service, across tasks and threads: it is `Sendable`, and its balance
/// is kept under a lock.
public final class RetryBudget: Sendable {
    /// What a call deposits, what a retry takes out and what the budget holds, in millionths of a retry.
    ///
    /// `held` stays from 0 to `capacity`, and `capacity` is at most `Int64.max` rounded down to a whole retry, so a
    /// deposit can come within a retry of `Int64.max`: every sum is clamped before it is made, never after.
    private struct Balance {
        static let retry: Int64 = 1_000_000
        /// The largest capacity, in whole retries, that the balance can hold.
        static let maximumRetries = Int64.max / retry
        let deposit: Int64
        let capacity: Int64
        var held: Int64

        /// Adds `amount` (0 or more), up to `capacity`, without overflow.
        mutating func add(_ amount: Int64) {
            self.held += min(amount, self.capacity - self.held)
        }
    }

    private let balance: AtomicBox<Balance>

    /// The share of a retry each call earns: 0.1, one retry per ten calls, by default.
    public let retriesPerCall: Double

    /// The most retries the budget holds at once, and what a new budget holds: 10 by default.
    public let capacity: Int

    /// Creates a full budget.
    ///
    /// - Parameters:
    ///   - retriesPerCall: The share of a retry each call earns, from 0 to 1; once every call fails, calls make
    ///     about `1 + retriesPerCall` attempts each.
    ///   - capacity: The most retries the budget holds, and what it starts with: from 1 to `Int64.max / 1_000_000`
    ///     (9,223,372,036,854), since the balance is kept in millionths of a retry.
    /// - Precondition: The parameters are in those ranges; a violation traps with a message naming the parameter
    ///   and the value.
    public init(retriesPerCall: Double = 0.1, capacity: Int = 10) {
        guarantee(
            (0...1).contains(retriesPerCall),
            "RetryBudget: retriesPerCall is the share of a retry each call earns and must be from 0 to 1, not "
                + "\(retriesPerCall)"
        )
        guarantee(
            capacity >= 1 && Int64(clamping: capacity) <= Balance.maximumRetries,
            "RetryBudget: capacity is the most retries the budget holds and must be from 1 to "
                + "\(Balance.maximumRetries), not \(capacity)"
        )
        self.retriesPerCall = retriesPerCall
        self.capacity = capacity
        let full = Int64(capacity) * Balance.retry
        let balance = Balance(
            deposit: Int64((retriesPerCall * Double(Balance.retry)).rounded()),
            capacity: full,
            held: full
        )
        self.balance = AtomicBox(balance, name: "RetryBudget")
    }

    /// How many whole retries the budget would allow now.
    public var availableRetries: Int {
        Int(self.balance.value.held / Balance.retry)
    }

    /// A call begins: deposits ``retriesPerCall``, up to ``capacity``.
    func recordCall() {
        self.balance.mutate { $0.add($0.deposit) }
    }

    /// A retry that was withdrawn did not happen (its call was cancelled during the back-off): puts it back, up to
    /// ``capacity``.
    func returnRetry() {
        self.balance.mutate { $0.add(Balance.retry) }
    }

    /// A retry is about to happen: takes one out, if the budget holds one.
    ///
    /// - Returns: Whether the retry may happen.
    func withdrawRetry() -> Bool {
        self.balance.mutate { balance in
            guard balance.held >= Balance.retry else { return false }
            balance.held -= Balance.retry
            return true
        }
    }
}
