import AtomicPrimitives
import Dispatch
import TestSupport
import Testing

/// Stands in for a blocking API of the package: passes its caller's site through, as the real ones do.
private func blockingStandIn(_ api: StaticString, file: StaticString = #fileID, line: UInt = #line) {
    BlockingCallCheck.warnIfInsideTask(
        api: api,
        alternative: "await standIn.wait()",
        file: file,
        line: line
    )
}

/// The reports that name `api`: each test gives its stand-in a name of its own.
private func standInReports(_ api: String, _ body: () async -> Void) async -> [DiagnosticReport] {
    await DiagnosticReports.capture(where: { $0.message.contains(api) }, body).reports
}

@Suite("Blocking calls inside tasks", .timeLimit(.minutes(1)))
struct BlockingCallCheckTests {
    @Test("a blocking call in a task is reported once per call site, naming the API, the site and the alternative")
    func reportedOncePerSite() async throws {
        let firstLine = #line + 4
        let secondLine = #line + 5
        let found = await standInReports("StandIn.oncePerSite()") {
            for _ in 0..<3 {
                blockingStandIn("StandIn.oncePerSite()")
            }
            blockingStandIn("StandIn.oncePerSite()")
        }
        try #require(found.count == 2)
        #expect(found.allSatisfy { $0.kind == .blockingCallInTask })
        #expect(found[0].sites == ["AtomicPrimitivesTests/BlockingCallCheckTests.swift:\(firstLine)"])
        #expect(found[1].sites == ["AtomicPrimitivesTests/BlockingCallCheckTests.swift:\(secondLine)"])
        #expect(found[0].message.contains("StandIn.oncePerSite() blocks its thread"))
        #expect(found[0].message.contains("Use await standIn.wait() instead"))
    }

    @Test("a blocking call on a plain thread is not reported")
    func plainThreadIsQuiet() async {
        let found = await standInReports("StandIn.plainThread()") {
            #expect(await runOnThreadsOffPool(1) { _ in blockingStandIn("StandIn.plainThread()") })
        }
        #expect(found.isEmpty)
    }

    @Test("trap mode stops at a blocking call in a task")
    func trapMode() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LockOrderChecking.mode = .trap
            blockingStandIn("StandIn.trap()")
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("called from inside a Swift concurrency task"))
    }
}
