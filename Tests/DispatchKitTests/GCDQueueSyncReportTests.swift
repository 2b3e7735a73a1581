import AtomicPrimitives
import Dispatch
import DispatchKit
import TestSupport
import Testing

/// A `sync` onto `queue` from a synchronous helper, as a task reaches one: it waits for the queue, never inline.
private func syncFromHelper(_ queue: GCDQueue, line: UInt = #line) -> Int {
    queue.sync(line: line) { 7 }
}

/// A `GCDQueue.sync` that waits for its queue is a blocking call: from inside a task it is reported, on every path to
/// the wait, also the fast one of a caller in no queue, which skips the main-queue doctor.
@Suite("GCDQueue.sync blocking-call reports", .serialized, .timeLimit(.minutes(1)))
struct GCDQueueSyncReportTests {
    /// The filter of this suite's captures: blocking-call reports of calls made in this file.
    private static let isOwnReport: @Sendable (DiagnosticReport) -> Bool = {
        $0.kind == .blockingCallInTask
            && $0.sites.allSatisfy { $0.hasPrefix("DispatchKitTests/GCDQueueSyncReportTests.swift") }
    }

    @Test("a sync from inside a task, the caller in no queue, is reported naming GCDQueue.sync(_:) and its site")
    func syncInTaskIsReported() async throws {
        let queue = GCDQueue(name: "test.sync-report.serial")
        let concurrent = GCDQueue(name: "test.sync-report.concurrent", kind: .concurrent)
        let found = DiagnosticReports.capture(where: Self.isOwnReport) {
            #expect(syncFromHelper(queue, line: 101) == 7)
            #expect(syncFromHelper(concurrent, line: 102) == 7)
            #expect(syncFromHelper(.utility, line: 103) == 7)
        }
        let sites = found.reports.flatMap(\.sites)
        let file = "DispatchKitTests/GCDQueueSyncReportTests.swift"
        #expect(sites == ["\(file):101", "\(file):102", "\(file):103"])
        #expect(found.reports.flatMap(\.resources) == ["GCDQueue.sync(_:)", "GCDQueue.sync(_:)", "GCDQueue.sync(_:)"])
        #expect(found.reports.allSatisfy { $0.message.contains("await withCheckedContinuation") })
    }

    @Test("a sync from a plain thread is not reported")
    func syncOnPlainThreadIsQuiet() async {
        let queue = GCDQueue(name: "test.sync-report.plain")
        let found = DiagnosticReports.capture(where: Self.isOwnReport) {
            #expect(runOnThreads(1) { _ in _ = syncFromHelper(queue, line: 201) })
        }
        #expect(found.reports.map(\.message) == [])
    }
}
