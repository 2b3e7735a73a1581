import TestSupport
import Testing

/// Records every failure an off-pool body noted as an issue of the running test.
func report(_ failures: PropertyFailures, sourceLocation: SourceLocation = #_sourceLocation) {
    for message in failures.all {
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }
}
