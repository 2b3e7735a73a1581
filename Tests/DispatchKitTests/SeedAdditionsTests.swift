import AtomicPrimitives
import Dispatch
import DispatchKit
import TestSupport
import Testing

@Suite("DispatchKit: Eki's array operators, scheduleWithDate, start and cancel handlers", .timeLimit(.minutes(1)))
struct SeedAdditionsTests {
    @Test("queue <<< [blocks] sends every block, in order, and returns the queue")
    func queueArrayOperator() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.arrayop")
            let order = AtomicBox<[Int]>([])
            let returned = queue <<< (0..<5).map { index in { @Sendable in order.mutate { $0.append(index) } } }
            checks.expect(returned == queue)
            queue.sync {}
            checks.expect(order.value == [0, 1, 2, 3, 4])
        }
    }

    @Test("group <<< [blocks] and group <<< [tasks] count every item until it has run")
    func groupArrayOperators() async throws {
        try await offPoolTest { checks in
            let group = GCDGroup(queue: GCDQueue(name: "test.grouparray", kind: .concurrent))
            let count = AtomicBox(0)
            group <<< (0..<3).map { _ in { @Sendable in count.mutate { $0 += 1 } } }
            group <<< (0..<4).map { _ in GCDTask(queue: .utility) { count.mutate { $0 += 10 } } }
            checks.expect(group.wait(timeout: deadline()) == .success)
            checks.expect(count.value == 43)
        }
    }

    @Test("scheduleWithDate fires once at the wall-clock date, or repeats with repeating")
    func scheduleWithDate() async {
        let fired = CountingSemaphore()
        let once = GCDTimer.scheduleWithDate(.now() + 0.02, onQueue: GCDQueue(name: "test.date")) { fired.signal() }
        #expect(await fired.wait(timeout: patienceLimit))
        #expect(await suspendUntil { !once.isRunning }, "a one-shot is finished after its fire")
        let ticks = CountingSemaphore()
        let repeating = GCDTimer.scheduleWithDate(.now(), repeating: 0.001) { ticks.signal() }
        for _ in 0..<3 { #expect(await ticks.wait(timeout: patienceLimit)) }
        #expect(repeating.isRunning)
        repeating.stop()
        let past = CountingSemaphore()
        let late = GCDTimer.scheduleWithDate(.now() - 60) { past.signal() }
        #expect(await past.wait(timeout: patienceLimit), "a date in the past fires at once")
        withExtendedLifetime(late) {}
    }

    @Test("startHandler runs once, before the first fire; cancelHandler runs once, after the last")
    func startAndCancelHandlers() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.handlers")
            let log = AtomicBox<[String]>([])
            let cancelled = DispatchSemaphore(value: 0)
            let timer = GCDTimer(queue: queue, interval: 0.001)
            timer.repeatInterval = 0.001
            timer.startHandler { log.mutate { $0.append("start") } }
            timer.cancelHandler {
                log.mutate { $0.append("cancel") }
                cancelled.signal()
            }
            let fired = DispatchSemaphore(value: 0)
            timer.handler {
                log.mutate { $0.append("fire") }
                fired.signal()
            }
            timer.start()
            for _ in 0..<3 { checks.expect(fired.wait(timeout: deadline()) == .success) }
            timer.pause()
            timer.start()
            timer.stop()
            checks.expect(cancelled.wait(timeout: deadline()) == .success)
            queue.sync {}
            let events = log.value
            checks.expect(events.first == "start")
            checks.expect(events.last == "cancel")
            checks.expect(events.filter { $0 == "start" }.count == 1)
            checks.expect(events.filter { $0 == "cancel" }.count == 1)
            checks.expect(events.filter { $0 == "fire" }.count >= 3)
        }
    }

    @Test("a one-shot's cancel handler runs after its fire; a timer released unstarted runs cancel but not start")
    func handlersOnOneShotAndRelease() async throws {
        try await offPoolTest { checks in
            let queue = GCDQueue(name: "test.handlers.release")
            let log = AtomicBox<[String]>([])
            let cancelled = DispatchSemaphore(value: 0)
            let oneShot = GCDTimer(queue: queue, interval: 0.001)
            oneShot.handler { log.mutate { $0.append("fire") } }
            oneShot.cancelHandler {
                log.mutate { $0.append("cancel") }
                cancelled.signal()
            }
            oneShot.start()
            checks.expect(cancelled.wait(timeout: deadline()) == .success)
            checks.expect(log.value == ["fire", "cancel"])

            log.mutate { $0 = [] }
            do {
                let unstarted = GCDTimer(queue: queue, interval: 60)
                unstarted.startHandler { log.mutate { $0.append("start") } }
                unstarted.cancelHandler {
                    log.mutate { $0.append("cancel") }
                    cancelled.signal()
                }
            }
            checks.expect(cancelled.wait(timeout: deadline()) == .success)
            queue.sync {}
            checks.expect(log.value == ["cancel"])
        }
    }
}
