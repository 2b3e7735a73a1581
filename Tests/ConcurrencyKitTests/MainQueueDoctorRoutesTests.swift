import ConcurrencyKit
import Dispatch
import Foundation
import TestSupport
import Testing

/// Every way ConcurrencyKit sends a block to the main queue reaches ``MainQueueDoctor``; other queues do not.
@Suite("MainQueueDoctor: the routes to main", .timeLimit(.minutes(1)))
struct MainQueueDoctorRoutesTests {
    @Test(
        "a block sent to a stuck main queue through each route makes the doctor warn",
        arguments: 0..<6
    )
    func everyRouteWarns(route: Int) async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) { [route] in
            MainQueueDoctor.patience = .milliseconds(50)
            let spoken = DispatchSemaphore(value: 0)
            DispatchQueue.main.async { _ = spoken.wait(timeout: deadline()) }  // main is busy: not drained
            let value = QueueSafeValue(value: 0)
            switch route {
            case 0: CallbackQueue.mainAsync.execute {}
            case 1: CallbackQueue.mainCurrentOrAsync.execute {}  // called off main: it hops
            case 2: CallbackQueue.dispatch(.main).execute {}
            case 3: GCDQueue.main.async {}
            case 4: GCDQueue.main.after(0) {}
            default: value.async(performIn: .main).lowestPriority.set(accessClosure: { $0 += 1 })
            }
            let limit = deadline()
            while !MainQueueDoctor.probe.isSettled && DispatchTime.now() < limit { usleep(1_000) }
            spoken.signal()
            guard MainQueueDoctor.probe.isSettled else { exit(3) }
        }
        let output = text(result?.standardErrorContent)
        #expect(
            output.contains("ConcurrencyKit: a block sent to the main queue has not started"),
            "route \(route): the child's standard error was: \(output)"
        )
    }

    @Test("blocks sent to other queues start no watch")
    func otherQueuesAreIgnored() async {
        await #expect(processExitsWith: .success) {
            MainQueueDoctor.patience = .milliseconds(50)
            let done = DispatchGroup()
            for queue in [DispatchQueue(label: "a"), .global()] {
                done.enter()
                CallbackQueue.dispatch(queue).execute { done.leave() }
            }
            done.enter()
            GCDQueue(name: "b").async { done.leave() }
            let value = QueueSafeValue(value: 0)
            done.enter()
            value.async(performIn: DispatchQueue(label: "c")).lowestPriority.set(
                accessClosure: { $0 += 1 },
                completion: { _ in done.leave() }
            )
            guard done.wait(timeout: deadline()) == .success else { exit(1) }
            guard !MainQueueDoctor.probe.hasWatchRunning else { exit(2) }
        }
    }
}
