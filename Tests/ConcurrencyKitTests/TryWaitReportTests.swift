import ConcurrencyKit
import Dispatch
import TestSupport
import Testing

/// Every try-wait of the package: zero, `.now()`, a past or negative deadline, or a resource that is free. None
/// parks its thread, so none is a blocking call.
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
}

@Suite("Try-waits are not blocking calls", .timeLimit(.minutes(1)))
struct TryWaitReportTests {
    @Test("try-waits from a synchronous helper inside a task are not reported")
    func tryWaitsAreQuiet() async {
        let found = DiagnosticReports.capture(where: { $0.kind == .blockingCallInTask }) {
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
        let found = DiagnosticReports.capture(where: { $0.kind == .blockingCallInTask }) {
            parkingWaits()
        }
        let apis = found.reports.flatMap(\.resources)
        #expect(apis == ["CountingSemaphore.wait(_:)", "CountingSemaphore.wait(_:)", "GCDGroup.wait(timeout:)"])
    }
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
