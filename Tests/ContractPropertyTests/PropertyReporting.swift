import TestSupport
import Testing

/// The time limit of every property suite: five minutes, a guard against a hang only.
///
/// A property's rounds under schedule chaos on a loaded machine can take many times their quiet minute, and a
/// property that waits for a run to end fails on its own once the run stops moving (``waitForProgress(stillFor:progress:until:)``);
/// the limit ends what hangs elsewhere, before the chaos seed's own limit of ten minutes (scripts/chaos.sh).
let propertyTimeLimit = TimeLimitTrait.Duration.minutes(5)

/// Records every failure an off-pool body noted as an issue of the running test.
func report(_ failures: PropertyFailures, sourceLocation: SourceLocation = #_sourceLocation) {
    for message in failures.all {
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }
}
