import AtomicPrimitives

/// Accepts the lock-order reports a test provokes on purpose: a cycle whose locks are all `GCDQueue`s named with
/// `namePrefix` (or `GCDQueue.main`, when `includingMain`), and no other report.
///
/// Pass it to `DiagnosticReports.capture(where:_:)` around the work, so that the intended inversions are claimed by
/// the test (and trap mode does not stop the suite) while every other report still warns or traps.
package func isIntendedQueueInversion(
    namePrefix: String,
    includingMain: Bool = false
) -> @Sendable (DiagnosticReport) -> Bool {
    // A resource reads `"GCDQueue 'name'" (GCDQueue made at File.swift:12)`: its quoted name comes first.
    let ours = "\"GCDQueue '\(namePrefix)"
    let main = "\"GCDQueue.main\""
    return { report in
        report.kind == .lockOrderCycle
            && report.resources.contains { $0.hasPrefix(ours) }
            && report.resources.allSatisfy { $0.hasPrefix(ours) || (includingMain && $0.hasPrefix(main)) }
    }
}
