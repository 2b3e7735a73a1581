import ConcurrencyKit
import Dispatch
import TestSupport
import Testing

/// Every try-wait of the package.
///
/// Zero, `.now()`, a past or negative deadline, or a resource that is free: none parks its thread, so none is a
/// blocking call.
private func tryWaits() {
    let empty = CountingSemaphore()
    _ = empty.wait(.now())
    _ = empty.wait(.zero)
    _ = empty.wait(.seconds(-1))
    _ = empty.wait(DispatchTime(uptimeNanoseconds: 1))
    let free = CountingSemaphore(.counting(3))
    free.wait()
    _ = free.wait(.seconds(5))
    free.perform {}
    let busy = GCDGroup()
    busy.enter()
    _ = busy.wait(timeout: .now())
    _ = busy.wait(timeout: .zero)
    _ = busy.wait(timeout: .seconds(-1))
    busy.leave()
    let done = GCDGroup()
    done.wait()
    _ = done.wait(timeout: .seconds(5))
    let value = QueueSafeValue(value: 0)
    _ = value.wait.lowestPriority.get()
    Queuer(name: "test.try-waits").waitUntilAllOperationsAreFinished()
}

@Suite(
    "Try-waits are not blocking calls",
    .serialized,
    .timeLimit(.minutes(1)),
    .debugBuildsOnly("the blocking-call check")
)
struct TryWaitReportTests {
    /// The filter of this suite's captures: blocking-call reports of calls made in this file, not those of other
    /// tests that run meanwhile.
    private static let isBlockingCallReport: @Sendable (DiagnosticReport) -> Bool = {
        $0.kind == .blockingCallInTask
            && $0.sites.allSatisfy { $0.hasPrefix("ConcurrencyKitTests/TryWaitReportTests.swift") }
    }

    @Test("try-waits from a synchronous helper inside a task are not reported")
    func tryWaitsAreQuiet() async {
        let found = DiagnosticReports.capture(where: Self.isBlockingCallReport) {
            tryWaits()
        }
        #expect(found.reports.map(\.message) == [])
    }

    @Test("try-waits inside a task do not stop the process in trap mode")
    func tryWaitsSurviveTrapMode() async {
        await #expect(processExitsWith: .success) {
            LockOrderChecking.mode = .trap
            tryWaits()
        }
    }

    @Test("a wait that parks its thread inside a task is still reported, naming the public call")
    func parkingWaitsAreReported() async throws {
        let found = DiagnosticReports.capture(where: Self.isBlockingCallReport) {
            parkingWaits()
        }
        let apis = found.reports.flatMap(\.resources)
        #expect(apis == ["CountingSemaphore.wait(_:)", "CountingSemaphore.wait(_:)", "GCDGroup.wait(timeout:)"])
    }

    @Test("withBlockingAllowed allows a wait that parks inside its scope only; child tasks inherit it")
    func allowedInScopeOnly() async {
        let empty = CountingSemaphore()
        let outsideLine = #line + 7
        let found = await DiagnosticReports.capture(where: Self.isBlockingCallReport) {
            withBlockingAllowed { _ = empty.wait(.milliseconds(2)) }
            await withBlockingAllowed {
                async let child: DispatchTimeoutResult = parkBriefly(empty)
                _ = await child
            }
            _ = parkBriefly(empty)
        }
        #expect(found.reports.flatMap(\.sites) == ["ConcurrencyKitTests/TryWaitReportTests.swift:\(outsideLine)"])
    }

    @Test("in trap mode, a wait that parks inside withBlockingAllowed does not stop the process")
    func allowedInTrapMode() async {
        await #expect(processExitsWith: .success) {
            LockOrderChecking.mode = .trap
            withBlockingAllowed { parkingWaits() }
        }
    }
}

/// A wait of 2 ms on `semaphore`, which nobody signals: it parks.
///
/// Its report names the caller's line.
private func parkBriefly(
    _ semaphore: CountingSemaphore,
    file: StaticString = #fileID,
    line: UInt = #line
) -> DispatchTimeoutResult {
    semaphore.wait(.milliseconds(2), file: file, line: line)
}

/// Waits that must park: nothing is free, and the deadline is ahead.
private func parkingWaits() {
    let empty = CountingSemaphore()
    _ = empty.wait(.now() + .milliseconds(5))
    _ = empty.wait(.milliseconds(5))
    let busy = GCDGroup()
    busy.enter()
    _ = busy.wait(timeout: .milliseconds(5))
    busy.leave()
}
