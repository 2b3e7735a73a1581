import ConcurrencyKit
import ConcurrencyKitTesting
import Dispatch
import Foundation
import TestSupport
import Testing

/// How the report names `resource`.
private func identity(of resource: AnyObject) -> UInt {
    UInt(bitPattern: Unmanaged.passUnretained(resource).toOpaque())
}

/// The first report with a wait on `resource` that `accept` takes; `nil` if none came within the patience.
private func report(
    on resource: AnyObject,
    where accept: (WaitReport.Wait) -> Bool = { _ in true }
) async -> (WaitReport, WaitReport.Wait)? {
    await report { $0.resource.identity == identity(of: resource) && accept($0) }
}

/// The first report with a wait that `accept` takes; `nil` if none came within the patience.
private func report(where accept: (WaitReport.Wait) -> Bool) async -> (WaitReport, WaitReport.Wait)? {
    let limit = ContinuousClock.now.advanced(by: patienceLimit)
    while ContinuousClock.now < limit {
        let report = WaitReport.current
        if let wait = report.waits.first(where: accept) { return (report, wait) }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return nil
}

/// Whether the task registry has no wait or hold on `resource` left, within the patience (a resumed task unlinks
/// its entry once it runs again).
private func noTaskEntries(on resource: AnyObject) async -> Bool {
    await noTaskEntries(onIdentity: identity(of: resource))
}

/// Whether the task registry has no wait or hold on the resource `identity` left, within the patience.
private func noTaskEntries(onIdentity identity: UInt) async -> Bool {
    let limit = ContinuousClock.now.advanced(by: patienceLimit)
    while ContinuousClock.now < limit {
        if TaskWaits.count(on: identity) == 0 { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return false
}

/// The site prefix of a call made in this file.
private let thisFile = "ConcurrencyKitTests/WaitReportTaskTests.swift:"

/// The async waits of a `CountingSemaphore`, each as a call that waits on an empty semaphore.
enum SemaphoreTaskWait: String, CaseIterable, Sendable {
    case acquire = "CountingSemaphore.acquire()"
    case wait = "CountingSemaphore.wait()"
    case waitTimeout = "CountingSemaphore.wait(timeout:)"
    case waitTimeoutClock = "CountingSemaphore.wait(timeout:clock:)"
    case withPermit = "CountingSemaphore.withPermit(_:)"

    /// Waits on `semaphore`; returns whether it got a resource (and gives it back, for the ones that keep it).
    func run(on semaphore: CountingSemaphore) async -> Bool {
        switch self {
        case .acquire: return (try? await semaphore.acquire()) != nil
        case .wait: return (try? await semaphore.wait()) != nil
        case .waitTimeout: return await semaphore.wait(timeout: patienceLimit)
        case .waitTimeoutClock: return await semaphore.wait(timeout: patienceLimit, clock: SuspendingClock())
        case .withPermit: return (try? await semaphore.withPermit { semaphore.signal() }) != nil
        }
    }
}

@Suite("WaitReport: task waits", .serialized, .timeLimit(.minutes(3)))
struct WaitReportTaskTests {
    @Test(
        "a task suspended in each semaphore wait shows as a task, with the call and its site",
        arguments: SemaphoreTaskWait.allCases
    )
    func semaphoreWait(_ kind: SemaphoreTaskWait) async throws {
        let semaphore = CountingSemaphore(name: "gate")
        let waiter = Task { await kind.run(on: semaphore) }
        let found = await report(on: semaphore)
        semaphore.signal()
        let returned = await completes { #expect(await waiter.value) }
        #expect(returned)
        let (report, wait) = try #require(found, "no wait on the semaphore appeared")
        #expect(wait.waiter.kind == .task, "\(report)")
        #expect(wait.call == kind.rawValue, "\(report)")
        // `wait()` has no site of its own: a twin of the blocking `wait(file:line:)` in name.
        #expect(kind == .wait ? wait.site == "an unknown site" : wait.site.hasPrefix(thisFile), "\(report)")
        #expect(wait.resource.type == "CountingSemaphore" && wait.resource.name == "gate", "\(report)")
        #expect(wait.state?.contains("a line waits") == true, "\(report)")
        #expect(await noTaskEntries(on: semaphore), "an entry outlived its resumed wait")
    }

    @Test("a task inside withPermit is named as the holder, with the site where it took the permit")
    func withPermitHolder() async throws {
        let semaphore = CountingSemaphore(.binary, name: "permit")
        let inside = CountingSemaphore(name: "inside")
        let release = CountingSemaphore(name: "release")
        let holderID = AtomicBox<UInt>(0)
        let holder = Task {
            try await semaphore.withPermit {
                holderID.mutate { $0 = TaskWaits.currentTask }
                inside.signal()
                try await release.acquire()
            }
        }
        try await inside.acquire()
        let waiter = Task { try await semaphore.withPermit {} }
        let found = await report(on: semaphore) { $0.call == "CountingSemaphore.withPermit(_:)" }
        release.signal()
        #expect(try await completes { try await holder.value })
        #expect(try await completes { try await waiter.value })
        let (report, wait) = try #require(found, "no wait on the semaphore appeared")
        let held = try #require(wait.holders.first, "\(report)")
        #expect(held.waiter.kind == .task && held.waiter.id == holderID.value, "\(report)")
        #expect(held.site?.hasPrefix(thisFile) == true, "\(report)")
        #expect(await noTaskEntries(on: semaphore), "a hold outlived its withPermit")
    }

    @Test("two tasks each in withPermit of one semaphore, awaiting the other's, are named as a deadlock")
    func withPermitCycle() async throws {
        let first = CountingSemaphore(.binary, name: "first")
        let second = CountingSemaphore(.binary, name: "second")
        let firstHeld = CountingSemaphore(name: "first held")
        let secondHeld = CountingSemaphore(name: "second held")
        let one = Task {
            try await first.withPermit {
                firstHeld.signal()
                try await secondHeld.acquire()
                try await second.acquire()
            }
        }
        let two = Task {
            try await second.withPermit {
                secondHeld.signal()
                try await firstHeld.acquire()
                try await first.acquire()
            }
        }
        let ours: Set = [identity(of: first), identity(of: second)]
        let isOurs = { (deadlock: WaitReport.Deadlock) in
            Set(deadlock.waits.map(\.resource.identity)) == ours
                && deadlock.waits.allSatisfy { $0.waiter.kind == .task }
        }
        let limit = ContinuousClock.now.advanced(by: patienceLimit)
        var found: WaitReport?
        while ContinuousClock.now < limit {
            let report = WaitReport.current
            if report.deadlocks.contains(where: isOurs) {
                found = report
                break
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        one.cancel()
        two.cancel()
        // `one`, cancelled first while `two` holds `second`, ends cancelled and lets go of `first`; `two` may be
        // granted `first` before its own cancellation lands, and then ends normally.
        let oneReturned = await completes { #expect(await one.result.isCancellation) }
        #expect(oneReturned)
        let twoResult = await two.result
        #expect(twoResult.isCancellation || (try? twoResult.get()) != nil, "\(twoResult)")
        let report = try #require(found, "no cycle of two tasks was named")
        let cycle = try #require(report.deadlocks.first(where: isOurs))
        #expect(Set(cycle.waits.compactMap(\.resource.name)) == ["first", "second"], "\(report)")
        for wait in cycle.waits {
            #expect(wait.call == "CountingSemaphore.acquire()" && wait.site.hasPrefix(thisFile), "\(report)")
            #expect(wait.holders.allSatisfy { $0.site?.hasPrefix(thisFile) == true }, "\(report)")
        }
        #expect(await noTaskEntries(on: first))
        #expect(await noTaskEntries(on: second))
    }

    @Test("a cancelled wait and a timed-out one leave no entry behind")
    func cancelAndTimeoutUnlink() async throws {
        let semaphore = CountingSemaphore(name: "never")
        let cancelled = Task { try await semaphore.acquire() }
        #expect(await report(on: semaphore) != nil)
        cancelled.cancel()
        let cancelledReturned = await completes { #expect(await cancelled.result.isCancellation) }
        #expect(cancelledReturned)
        #expect(await noTaskEntries(on: semaphore))
        let timed = Task { await semaphore.wait(timeout: .milliseconds(20)) }
        let timedReturned = await completes { #expect(await timed.value == false) }
        #expect(timedReturned)
        #expect(await noTaskEntries(on: semaphore))
        let clock = TestClock()
        let onClock = Task { await semaphore.wait(timeout: .seconds(5), clock: clock) }
        try await clock.waitForSleepers(1, timeout: patienceLimit)
        #expect(await report(on: semaphore) != nil)
        clock.advance(by: .seconds(5))
        let onClockReturned = await completes { #expect(await onClock.value == false) }
        #expect(onClockReturned)
        #expect(await noTaskEntries(on: semaphore))
    }

    @Test("a suspend command waiting for a value's turn shows as a task wait, held by the thread in the closure")
    func suspendCommandWait() async throws {
        let value = QueueSafeValue(value: 0)
        let inClosure = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holderThread = AtomicBox<UInt>(0)
        let holderDone = DispatchGroup()
        holderDone.enter()
        Thread.detachNewThread {
            holderThread.mutate { $0 = UInt(pthread_self()) }
            _ = value.wait.lowestPriority.set { _ in
                inClosure.signal()
                hold(until: release)
            }
            holderDone.leave()
        }
        #expect(await waitOffPool(inClosure))
        let waiter = Task { await value.suspend.lowestPriority.set { $0 += 1 } }
        // Other suites run beside this one: the wait is ours if the thread in our closure holds it.
        let found = await report { wait in
            wait.call == "QueueSafeValue.suspend.lowestPriority"
                && wait.holders.contains { $0.waiter.id == holderThread.value }
        }
        release.signal()
        #expect(await waitOffPool(holderDone))
        let waiterReturned = try await completes { () async throws in #expect(try await waiter.value.get() == 1) }
        #expect(waiterReturned)
        let (report, wait) = try #require(found, "no wait for the turn appeared")
        #expect(wait.waiter.kind == .task, "\(report)")
        #expect(wait.call == "QueueSafeValue.suspend.lowestPriority", "\(report)")
        #expect(wait.resource.type == "QueueSafeValue<Int>", "\(report)")
        #expect(wait.holders.map(\.waiter.id) == [holderThread.value], "\(report)")
        #expect(await noTaskEntries(onIdentity: wait.resource.identity))
    }

    @Test("GCDGroup.waitForAll and Queuer.waitForAll show as task waits with their sites")
    func groupAndQueuerWaits() async throws {
        let group = GCDGroup()
        group.enter()
        let groupWaiter = Task { await group.waitForAll() }
        let groupFound = await report(on: group)
        group.leave()
        #expect(await completes { await groupWaiter.value })
        let (groupReport, groupWait) = try #require(groupFound, "no wait on the group appeared")
        #expect(groupWait.waiter.kind == .task && groupWait.call == "GCDGroup.waitForAll()", "\(groupReport)")
        #expect(groupWait.site.hasPrefix(thisFile), "\(groupReport)")
        #expect(await noTaskEntries(on: group))

        let queuer = Queuer(name: "wait report")
        let release = DispatchSemaphore(value: 0)
        queuer.addOperation { hold(until: release) }
        let queuerWaiter = Task { await queuer.waitForAll() }
        let queuerFound = await report(on: queuer)
        release.signal()
        #expect(await completes { await queuerWaiter.value })
        let (queuerReport, queuerWait) = try #require(queuerFound, "no wait on the Queuer appeared")
        #expect(queuerWait.waiter.kind == .task && queuerWait.call == "Queuer.waitForAll()", "\(queuerReport)")
        #expect(queuerWait.site.hasPrefix(thisFile), "\(queuerReport)")
        #expect(await noTaskEntries(on: queuer))
    }

    @Test("a TestClock sleep shows as a task wait with its deadline")
    func testClockSleep() async throws {
        let clock = TestClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(3)) }
        let found = await report(on: clock)
        clock.advance(by: .seconds(3))
        #expect(try await completes { try await sleeper.value })
        let (report, wait) = try #require(found, "no sleep appeared")
        #expect(wait.waiter.kind == .task && wait.resource.type == "TestClock", "\(report)")
        #expect(wait.state == "sleeps until 3.0 seconds", "\(report)")
        #expect(await noTaskEntries(on: clock))
    }

    @Test("a semaphore with a free resource records nothing")
    func fastPathsRecordNothing() async throws {
        let semaphore = CountingSemaphore(.binary, name: "free")
        try await semaphore.acquire()
        semaphore.signal()
        #expect(await semaphore.wait(timeout: .seconds(1)))
        #expect(TaskWaits.count(on: identity(of: semaphore)) == 0)
        #expect(TaskWaits.count(on: identity(of: semaphore)) == 0)
    }
}

extension Result {
    /// Whether it is a failure with `CancellationError`.
    fileprivate var isCancellation: Bool {
        if case .failure(let error) = self { return error is CancellationError }
        return false
    }
}
