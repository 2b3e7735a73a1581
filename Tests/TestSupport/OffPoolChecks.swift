import AtomicPrimitives
import Foundation
import Testing

/// The expectations of a test body that runs off the cooperative pool, recorded later on the test's own task.
///
/// Swift Testing attributes an issue to a test through a task-local value, so an `#expect` that fails on a thread of
/// its own is reported as an issue of no test ("Test «unknown»"): the run fails, but the test passes. A body given to
/// ``offPoolTest(_:)`` checks with ``expect(_:_:sourceLocation:)`` and ``require(_:_:sourceLocation:)`` instead,
/// and ``offPoolTest(_:)`` records each failure, with its source location, on the test's task when the body returns.
public final class OffPoolChecks: Sendable {
    private struct Failure: Sendable {
        let comment: String
        let sourceLocation: SourceLocation
    }

    /// Thrown by ``require(_:_:sourceLocation:)``: the failure is already noted; the body stops.
    public struct RequirementFailed: Error {}

    private let failures = AtomicBox<[Failure]>([])

    init() {}

    /// Notes a failure at `sourceLocation` unless `condition` holds; returns `condition`.
    @discardableResult
    public func expect(
        _ condition: Bool,
        _ comment: @autoclosure () -> String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        if !condition { self.record(comment(), at: sourceLocation) }
        return condition
    }

    /// Notes a failure at `sourceLocation` unless `lhs == rhs`, naming both values; returns whether they are equal.
    @discardableResult
    public func expect<Value: Equatable>(
        _ lhs: Value,
        equals rhs: Value,
        _ comment: @autoclosure () -> String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        let equal = lhs == rhs
        if !equal { self.record("\(lhs) is not equal to \(rhs). \(comment())", at: sourceLocation) }
        return equal
    }

    /// Notes a failure at `sourceLocation` unless `body` throws an error of type `errorType`; returns whether it did.
    @discardableResult
    public func expect<Thrown: Error, Output>(
        throws errorType: Thrown.Type,
        _ comment: @autoclosure () -> String = "",
        sourceLocation: SourceLocation = #_sourceLocation,
        performing body: () throws -> Output
    ) -> Bool {
        let outcome: String
        do {
            _ = try body()
            outcome = "nothing was thrown"
        } catch is Thrown {
            return true
        } catch {
            outcome = "\(error) was thrown"
        }
        self.record("expected an error of type \(errorType); \(outcome). \(comment())", at: sourceLocation)
        return false
    }

    /// Returns `value` unwrapped, or notes a failure at `sourceLocation` and throws ``RequirementFailed``.
    public func require<Value>(
        _ value: Value?,
        _ comment: @autoclosure () -> String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws(RequirementFailed) -> Value {
        guard let value else {
            self.record("required value was nil. \(comment())", at: sourceLocation)
            throw RequirementFailed()
        }
        return value
    }

    /// Notes a failure at `sourceLocation` unless `condition` holds, and then throws ``RequirementFailed``.
    public func require(
        _ condition: Bool,
        _ comment: @autoclosure () -> String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws(RequirementFailed) {
        guard condition else {
            self.record("requirement failed. \(comment())", at: sourceLocation)
            throw RequirementFailed()
        }
    }

    private func record(_ comment: String, at sourceLocation: SourceLocation) {
        let text = "Expectation failed off the cooperative pool" + (comment.isEmpty ? "" : ": \(comment)")
        self.failures.mutate { $0.append(Failure(comment: text, sourceLocation: sourceLocation)) }
    }

    /// Records every noted failure as an issue of the current test; call on the test's task.
    func recordIssues() {
        for failure in self.failures.value {
            Issue.record(Comment(rawValue: failure.comment), sourceLocation: failure.sourceLocation)
        }
    }
}

/// Runs a test's blocking `body` on a thread of its own, outside every task, and records its failed checks on the
/// calling test's task.
///
/// Swift Testing runs even a synchronous `@Test` inside a task, on the cooperative pool (as wide as the machine has
/// cores): a test that blocks there starves the async work of every test running beside it, and trips the package's
/// blocking-call check. Check with `checks.expect`, not `#expect`, in `body` (see ``OffPoolChecks``). An error
/// `body` throws, other than a failed `require`, is rethrown.
@discardableResult
public func offPoolTest<Result: Sendable>(
    _ body: @escaping @Sendable (_ checks: OffPoolChecks) throws -> Result
) async throws -> Result? {
    let checks = OffPoolChecks()
    let outcome = await offPool { () -> Swift.Result<Result, any Error> in
        Swift.Result { try body(checks) }
    }
    checks.recordIssues()
    switch outcome {
    case .success(let result): return result
    case .failure(is OffPoolChecks.RequirementFailed): return nil
    case .failure(let error): throw error
    }
}
