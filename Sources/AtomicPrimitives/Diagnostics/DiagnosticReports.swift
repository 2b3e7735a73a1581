import Synchronization

/// The test hook of the debug checks: captures reports instead of writing them or trapping.
///
/// Tests in every module of the package use it to assert that a report was made, in any mode:
///
///     let (_, reports) = DiagnosticReports.capture(where: { $0.message.contains("my lock") }) { ... }
///
/// Only reports the filter accepts are captured; all others are written or trap as the mode says, so a test that
/// captures does not hide another test's real finding. Reports are made on the thread that acquires, so `body`
/// should wait for the threads it starts.
package enum DiagnosticReports {
    private final class Capture: Sendable {
        let filter: @Sendable (DiagnosticReport) -> Bool
        let reports = AtomicBox<[DiagnosticReport]>([], unobserved: ())

        init(filter: @escaping @Sendable (DiagnosticReport) -> Bool) {
            self.filter = filter
        }
    }

    private static let captures = AtomicBox<[Capture]>([], unobserved: ())

    /// Runs `body` and returns what it returned, with the reports made meanwhile that `filter` accepts.
    ///
    /// - Parameters:
    ///   - filter: Which reports belong to this test; called on the reporting thread.
    ///   - body: The code under test.
    /// - Returns: `body`'s result and the captured reports, in the order they were made.
    /// - Throws: What `body` throws.
    package static func capture<Result, Failure: Error>(
        where filter: @escaping @Sendable (DiagnosticReport) -> Bool,
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> (result: Result, reports: [DiagnosticReport]) {
        let capture = Capture(filter: filter)
        self.captures.mutate { $0.append(capture) }
        defer { self.captures.mutate { $0.removeAll { $0 === capture } } }
        let result = try body()
        return (result, capture.reports.value)
    }

    /// The reports made while `body` runs that `filter` accepts; the async form of ``capture(where:_:)``.
    package static func capture<Result>(
        isolation: isolated (any Actor)? = #isolation,
        where filter: @escaping @Sendable (DiagnosticReport) -> Bool,
        _ body: () async throws -> Result
    ) async rethrows -> (result: Result, reports: [DiagnosticReport]) {
        let capture = Capture(filter: filter)
        self.captures.mutate { $0.append(capture) }
        defer { self.captures.mutate { $0.removeAll { $0 === capture } } }
        let result = try await body()
        return (result, capture.reports.value)
    }

    /// Gives `report` to the first capture that accepts it; `false` if none does.
    static func claim(_ report: DiagnosticReport) -> Bool {
        let captures = self.captures.value
        guard let capture = captures.first(where: { $0.filter(report) }) else { return false }
        capture.reports.mutate { $0.append(report) }
        return true
    }
}
