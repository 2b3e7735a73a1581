/// Warns when a blocking call is made from inside a Swift concurrency task, in debug builds.
///
/// A task that blocks its thread holds one of the cooperative pool's few threads (two on a two-core machine): a few
/// such calls can starve every task of the process. The blocking APIs of the package are unavailable from async code
/// (`@available(*, noasync)`), but a synchronous function called from a task can still reach them.
///
/// The check is made where a thread parks, not where a public call enters: the public call names itself in a
/// ``BlockingCall`` and hands it down to the wait that parks (the semaphore's line once nothing is free, the wait for
/// a value's turn, a `sync` that is not run inline, a group's wait), which runs through ``blocking(_:_:)``. A
/// try-wait — a deadline of now or before, a timeout of zero or less, or a resource that is free — never parks, so it
/// is never reported, and a new blocking API is covered by the wait it parks in. The report comes once per call site,
/// names the async alternative, and follows its own switch, ``BlockingCallChecking/mode``
/// (`CONCURRENCYKIT_BLOCKING_CHECK`; until set, the lock-order checker's): `warn` writes it, `trap` stops, `off`
/// checks nothing. Inside ``withBlockingAllowed(_:)`` nothing is reported.
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
        guard BlockingCallChecking.mode != .off, Self.isInsideTask, !Self.isAllowed else { return }
        Self.report(api: api, alternative: alternative, file: file, line: line)
        #endif
    }

    /// Whether the current task runs inside ``withBlockingAllowed(_:)``.
    @usableFromInline @TaskLocal
    static var isAllowed = false

    /// Runs `body` with blocking calls allowed on the current task: ``withBlockingAllowed(_:)``.
    static func allowing<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        // `withValue` rethrows untyped errors: carry the typed one through a `Result`.
        let outcome = Self.$isAllowed.withValue(true) { Swift.Result { () throws(Failure) -> Result in try body() } }
        return try outcome.get()
    }

    /// Runs the async `body` with blocking calls allowed on the current task and its child tasks.
    static func allowing<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> Result
    ) async rethrows -> Result {
        try await Self.$isAllowed.withValue(true, operation: body)
    }

    /// Runs `wait`, which parks the thread for the public blocking call `call`: reports the call first if it is made
    /// from inside a task, as ``warnIfInsideTask(api:alternative:file:line:)`` does, and lets ``MainQueueDoctor`` name
    /// the call while it blocks the main queue.
    ///
    /// Call it only where the thread is about to park: after a look that found nothing free and a deadline still
    /// ahead.
    /// - Parameters:
    ///   - call: The user's blocking call, handed down from its public entry point.
    ///   - wait: The part that parks.
    /// - Returns: What `wait` returns.
    package static func blocking<Result>(_ call: BlockingCall, _ wait: () -> Result) -> Result {
        Self.blocking(call, on: nil, wait)
    }

    /// Runs `wait` as ``blocking(_:_:)`` does, recorded for ``WaitReport`` as the thread's wait on `target` (a
    /// ``WaitTarget``) while it runs; `nil` records nothing, for a wait that records itself once it sleeps.
    ///
    /// - Parameters:
    ///   - call: The user's blocking call, handed down from its public entry point.
    ///   - target: What the thread waits on.
    ///   - wait: The part that parks.
    /// - Returns: What `wait` returns.
    package static func blocking<Result>(_ call: BlockingCall, on target: AnyObject?, _ wait: () -> Result) -> Result {
        Self.warnIfInsideTask(api: call.api, alternative: call.alternative, file: call.file, line: call.line)
        return MainQueueDoctor.whileBlocking(
            api: call.api,
            alternative: call.alternative,
            file: call.file,
            line: call.line
        ) {
            // Recorded around the wait alone: the checks above may wait on locks of their own, each its own record.
            guard let target else { return wait() }
            return WaitRecords.whileParked(on: target, as: call, wait)
        }
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
                DiagnosticReport.blockingSwitchHint,
            ].joined(separator: "\n")
        ).emit()
    }
    #endif
}
