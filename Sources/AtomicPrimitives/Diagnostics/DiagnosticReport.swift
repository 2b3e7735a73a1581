/// One finding of ConcurrencyKit's checks: a lock-order cycle, two unordered peers nested, a blocking call in a task
/// (debug builds), or a manual-completion command whose `done` is overdue (any build).
package struct DiagnosticReport: Sendable {
    /// What was found.
    package enum Kind: Sendable, Equatable {
        /// Two or more locks taken in orders that form a cycle: a possible deadlock.
        case lockOrderCycle
        /// Two locks of one ``LockOrderPeerClass`` held at once.
        case unorderedPeers
        /// A blocking call made from inside a Swift concurrency task.
        case blockingCallInTask
        /// A manual-completion command whose closure returned long ago, and whose `done` has not been called.
        case manualCompletionOverdue
    }

    /// What was found.
    package let kind: Kind
    /// How the report names the resources involved: the two locks of the closing acquisition, or the blocking API.
    package let resources: [String]
    /// The source sites the report names (`Module/File.swift:12`), in the order it names them.
    package let sites: [String]
    /// The whole report, as written to standard error.
    package let message: String

    /// Creates a report.
    ///
    /// - Parameters:
    ///   - kind: What was found.
    ///   - resources: How the report names the resources involved.
    ///   - sites: The source sites the report names.
    ///   - message: The whole report, as written to standard error.
    package init(kind: Kind, resources: [String], sites: [String], message: String) {
        self.kind = kind
        self.resources = resources
        self.sites = sites
        self.message = message
    }

    /// The last line of every debug-check report: how to change what happens.
    static let switchHint =
        "  (LockOrderChecking.mode or CONCURRENCYKIT_LOCK_ORDER=warn|trap|off decides what a report does.)"

    /// The last line of a blocking-call report: its own switch, and the scoped way to allow blocking.
    static let blockingSwitchHint =
        "  (BlockingCallChecking.mode or CONCURRENCYKIT_BLOCKING_CHECK=warn|trap|off decides what this report does; "
        + "withBlockingAllowed { } allows blocking in a scope.)"

    /// Hands the report to a test that captures it, or else writes it (`warn`) or stops the process (`trap`).
    func emit() {
        #if DEBUG
        if DiagnosticReports.claim(self) { return }
        switch self.kind == .blockingCallInTask ? BlockingCallChecking.mode : LockOrderChecking.mode {
        case .off: return
        case .warn: CLibrary.writeLineToStandardError(self.message)
        case .trap:
            CLibrary.writeLineToStandardError(self.message)
            let mode = self.kind == .blockingCallInTask ? "BlockingCallChecking.mode" : "LockOrderChecking.mode"
            halt("ConcurrencyKit stopped at the report above (\(mode) is trap).")
        }
        #endif
    }

    /// Hands the report to a test that captures it, or else writes it to standard error: a warning, in every build,
    /// whatever `LockOrderChecking.mode` says; it never stops the process.
    package func warn() {
        if DiagnosticReports.claim(self) { return }
        CLibrary.writeLineToStandardError(self.message)
    }
}
