/// One finding of ConcurrencyKit's debug checks: a lock-order cycle, two unordered peers nested, a blocking call in a
/// task.
package struct DiagnosticReport: Sendable {
    /// What was found.
    package enum Kind: Sendable, Equatable {
        /// Two or more locks taken in orders that form a cycle: a possible deadlock.
        case lockOrderCycle
        /// Two locks of one ``LockOrderPeerClass`` held at once.
        case unorderedPeers
        /// A blocking call made from inside a Swift concurrency task.
        case blockingCallInTask
    }

    /// What was found.
    package let kind: Kind
    /// How the report names the resources involved: the two locks of the closing acquisition, or the blocking API.
    package let resources: [String]
    /// The source sites the report names (`Module/File.swift:12`), in the order it names them.
    package let sites: [String]
    /// The whole report, as written to standard error.
    package let message: String

    /// The last line of every report: how to change what happens.
    static let switchHint =
        "  (LockOrderChecking.mode or CONCURRENCYKIT_LOCK_ORDER=warn|trap|off decides what a report does.)"

    /// Hands the report to a test that captures it, or else writes it (`warn`) or stops the process (`trap`).
    func emit() {
        #if DEBUG
        if DiagnosticReports.claim(self) { return }
        switch LockOrderChecking.mode {
        case .off: return
        case .warn: CLibrary.writeLineToStandardError(self.message)
        case .trap:
            CLibrary.writeLineToStandardError(self.message)
            preconditionFailure("ConcurrencyKit stopped at the report above (LockOrderChecking.mode is trap).")
        }
        #endif
    }
}
