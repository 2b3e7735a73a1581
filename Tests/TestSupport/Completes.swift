import Dispatch
import Synchronization

/// Runs `body` in a task of its own and suspends until it returns, for at most `seconds` (by default
/// ``patienceSeconds``).
///
/// For every await in a test that nothing can cancel: a continuation the package resumes (`await
/// queuer.waitForAll()`, `await group.wait()`), an unstructured task's `value`. A suite's `.timeLimit` cancels a
/// hung test's task, but cannot end such an await, so a hang would hold the whole run; here a Dispatch timer ends
/// the wait instead, and the test fails. `body` runs in an unstructured task, which inherits the test's task-local
/// values (so its `#expect`s count for the test) but not its actor: call an isolated method inside it with `await`.
///
/// ```swift
/// #expect(await completes { await queuer.waitForAll() })
/// #expect(try await completes { try await task.value })
/// ```
///
/// - Returns: `false` if `body` had not returned within `seconds`. It is then left running.
/// - Throws: What `body` threw, if it threw in time.
public func completes<Failure: Error>(
    within seconds: Int = patienceSeconds,
    _ body: @escaping @Sendable () async throws(Failure) -> Void
) async throws(Failure) -> Bool {
    let outcome = await withCheckedContinuation { continuation in
        let race = CompletionRace<Failure>(continuation, seconds: seconds)
        Task {
            do throws(Failure) {
                try await body()
                race.finish(.success(()))
            } catch {
                race.finish(.failure(error))
            }
        }
    }
    guard let outcome else { return false }
    try outcome.get()
    return true
}

/// One wait of ``completes(within:_:)``: `body`'s return against the timer; the first to come resumes the caller,
/// with what `body` did, or with `nil` for the timer.
private final class CompletionRace<Failure: Error>: @unchecked Sendable {
    // Safety: `continuation` and `timer` are set in init, before the timer and the body's task start; afterwards only
    // the one caller of `finish` that wins `claimed` uses them.
    private let continuation: CheckedContinuation<Result<Void, Failure>?, Never>
    private let timer: any DispatchSourceTimer
    // An atomic, not a lock of the package: the test harness adds no lock, report or chaos point of its own.
    private let claimed = Atomic<Bool>(false)

    init(_ continuation: CheckedContinuation<Result<Void, Failure>?, Never>, seconds: Int) {
        self.continuation = continuation
        self.timer = DispatchSource.makeTimerSource(queue: .global())
        // The handler keeps the race alive until the timer fires or is cancelled, which releases the handler.
        self.timer.setEventHandler { self.finish(nil) }
        self.timer.schedule(deadline: deadline(seconds))
        self.timer.activate()
    }

    /// Resumes the caller with `outcome`, if nothing did yet; cancels the timer, so that it does not stay pending
    /// for the rest of its time once the body has returned.
    func finish(_ outcome: Result<Void, Failure>?) {
        guard !self.claimed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        self.timer.cancel()
        self.continuation.resume(returning: outcome)
    }
}
