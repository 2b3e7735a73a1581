/// Warns when a blocking call is made from inside a Swift concurrency task, in debug builds.
///
/// A task that blocks its thread holds one of the cooperative pool's few threads (two on a two-core machine): a few
/// such calls can starve every task of the process. The blocking APIs of the package are unavailable from async code
/// (`@available(*, noasync)`), but a synchronous function called from a task can still reach them. They call
/// ``warnIfInsideTask(api:alternative:file:line:)`` first, most through ``blocking(api:alternative:file:line:_:)``;
/// it reports once per call site, naming the async alternative, under the same switch as the lock-order checker
/// (`LockOrderChecking.mode`, `CONCURRENCYKIT_LOCK_ORDER`): `warn` writes the report, `trap` stops, `off` checks
/// nothing.
@usableFromInline
package enum BlockingCallCheck {
    #if DEBUG
    private struct Site: Hashable {
        let file: String
        let line: UInt
    }

    private static let reportedSites = AtomicBox<Set<Site>>([], unobserved: ())
    #endif

    /// Reports, once per call site, that the blocking `api` was called from inside a task.
    ///
    /// - Parameters:
    ///   - api: The blocking call, as users write it: `"CountingSemaphore.wait()"`.
    ///   - alternative: What to write instead in async code: `"await semaphore.wait()"`.
    ///   - file: The caller's file; pass the public entry point's own `#fileID` default through.
    ///   - line: The caller's line.
    @inlinable
    package static func warnIfInsideTask(
        api: StaticString,
        alternative: StaticString,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        #if DEBUG
        guard LockOrderChecking.isOn, Self.isInsideTask else { return }
        Self.report(api: api, alternative: alternative, file: file, line: line)
        #endif
    }

    /// Runs `wait`, the blocking part of the public call `api`: reports the call first if it is made from inside a
    /// task, as ``warnIfInsideTask(api:alternative:file:line:)`` does, and lets ``MainQueueDoctor`` name the call
    /// while it blocks the main queue.
    ///
    /// - Parameters:
    ///   - api: The blocking call, as users write it: `"GCDGroup.wait()"`.
    ///   - alternative: What to write instead in async code: `"await group.waitForAll()"`.
    ///   - file: The caller's file; pass the public entry point's own `#fileID` default through.
    ///   - line: The caller's line.
    ///   - wait: The blocking part of the call.
    /// - Returns: What `wait` returns.
    package static func blocking<Result>(
        api: StaticString,
        alternative: StaticString,
        file: StaticString,
        line: UInt,
        _ wait: () -> Result
    ) -> Result {
        Self.warnIfInsideTask(api: api, alternative: alternative, file: file, line: line)
        return MainQueueDoctor.whileBlocking(api: api, alternative: alternative, file: file, line: line, wait)
    }

    /// Whether the calling code runs inside a Swift concurrency task.
    @usableFromInline
    package static var isInsideTask: Bool {
        withUnsafeCurrentTask { $0 != nil }
    }

    #if DEBUG
    @usableFromInline
    static func report(api: StaticString, alternative: StaticString, file: StaticString, line: UInt) {
        let site = Site(file: "\(file)", line: line)
        guard Self.reportedSites.mutate({ $0.insert(site).inserted }) else { return }
        let at = LockOrderSite(file: file, line: line).description
        DiagnosticReport(
            kind: .blockingCallInTask,
            resources: ["\(api)"],
            sites: [at],
            message: [
                "ConcurrencyKit: \(api) blocks its thread, and was called from inside a Swift concurrency task at "
                    + "\(at).",
                "  A blocked task holds a thread of the cooperative pool, which has one per core; a few of them can "
                    + "starve every task.",
                "  Use \(alternative) instead. (Reported once per call site.)",
                DiagnosticReport.switchHint,
            ].joined(separator: "\n")
        ).emit()
    }
    #endif
}
