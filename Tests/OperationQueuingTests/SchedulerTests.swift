import Dispatch
import OperationQueuing
import TestSupport
import Testing

@Suite("Scheduler", .timeLimit(.minutes(1)))
struct SchedulerTests {
    @Test("fires on its interval until cancelled")
    func repeating() async throws {
        try await offPoolTest { checks in
            let fired = DispatchSemaphore(value: 0)
            let scheduler = Scheduler(deadline: .now() + .milliseconds(10), repeating: .milliseconds(10)) {
                fired.signal()
            }
            for _ in 0..<3 { checks.expect(fired.wait(timeout: deadline()) == .success) }
            scheduler.cancel()
            while fired.wait(timeout: .now()) == .success {}
            checks.expect(fired.wait(timeout: .now() + .milliseconds(80)) == .timedOut)
        }
    }

    @Test("starts at the first setHandler; setting a handler again replaces it")
    func setHandler() async throws {
        try await offPoolTest { checks in
            let log = AtomicBox<[String]>([])
            let fired = DispatchSemaphore(value: 0)
            // The deadline lies well after the check below, so that both handlers are set before the first fire.
            let scheduler = Scheduler(deadline: .now() + .milliseconds(500), repeating: .milliseconds(10))
            checks.expect(fired.wait(timeout: .now() + .milliseconds(60)) == .timedOut, "no handler, not started")
            scheduler.setHandler { log.mutate { $0.append("first") } }
            scheduler.setHandler {
                log.mutate { $0.append("second") }
                fired.signal()
            }
            checks.expect(fired.wait(timeout: deadline()) == .success)
            scheduler.cancel()
            checks.expect(!log.value.contains("first"))
        }
    }

    @Test("releasing a scheduler is safe in every state")
    func releaseInEveryState() async {
        await #expect(processExitsWith: .success) {
            _ = Scheduler(deadline: .now() + 10)  // never started
            let running = Scheduler(deadline: .now() + 10, repeating: .seconds(1)) {}
            let cancelled = Scheduler(deadline: .now() + 10) {}
            cancelled.cancel()
            let cancelledUnstarted = Scheduler(deadline: .now() + 10)
            cancelledUnstarted.cancel()
            let twice = Scheduler(deadline: .now() + 10) {}
            twice.setHandler {}
            withExtendedLifetime((running, cancelled, cancelledUnstarted, twice)) {}
        }
    }

    @Test(
        "a negative or zero repeating interval traps with a message naming Scheduler",
        arguments: [-1_000, -5, 0]
    )
    func badInterval(milliseconds: Int) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [milliseconds] in
            _ = Scheduler(deadline: .now(), repeating: .milliseconds(milliseconds)) {}
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("Scheduler: repeating must be .never or a positive interval"))
    }

    @Test("deadline, repeating and qualityOfService read back what init was given")
    func readOnlyProperties() {
        let deadline = DispatchTime.now() + 3600
        let scheduler = Scheduler(deadline: deadline, repeating: .seconds(5), qualityOfService: .utility)
        #expect(scheduler.deadline == deadline)
        #expect(scheduler.repeating == .seconds(5))
        #expect(scheduler.qualityOfService == .utility)
        #expect(Scheduler(deadline: deadline).repeating == .never)
        scheduler.cancel()
    }

    @Test("the Duration spelling fires after its delay and on its interval, and reads back as Dispatch values")
    func durationSpelling() async throws {
        try await offPoolTest { checks in
            let fired = DispatchSemaphore(value: 0)
            let scheduler = Scheduler(after: .milliseconds(5), repeating: .milliseconds(5)) { fired.signal() }
            for _ in 0..<3 { checks.expect(fired.wait(timeout: deadline()) == .success) }
            scheduler.cancel()
            checks.expect(scheduler.repeating == .nanoseconds(5_000_000))
            let once = Scheduler(after: .zero, qualityOfService: .utility) { fired.signal() }
            checks.expect(fired.wait(timeout: deadline()) == .success)
            checks.expect(once.repeating == .never)
            checks.expect(once.qualityOfService == .utility)
        }
    }

    @Test("a Duration too long to represent means never: no first fire, or no repeat")
    func durationTooLongMeansNever() {
        let never = Scheduler(after: .seconds(Int64.max), repeating: .seconds(Int64.max))
        #expect(never.deadline == .distantFuture)
        #expect(never.repeating == .never)
    }

    @Test("a negative delay or a repeat of zero or less traps, naming the parameter and the value", arguments: [0, 1])
    func badDurations(which: Int) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [which] in
            if which == 0 {
                _ = Scheduler(after: .seconds(-1)) {}
            } else {
                _ = Scheduler(after: .zero, repeating: .zero) {}
            }
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains(
                which == 0
                    ? "Scheduler: delay must be 0 or more, got -1.0 seconds"
                    : "Scheduler: repeating must be nil or at least one nanosecond (Dispatch's unit), got 0.0 seconds"
            )
        )
    }
}

@Suite("Scheduler: the shortest repeat", .timeLimit(.minutes(1)))
struct SchedulerRepeatRuleTests {
    @Test("one nanosecond is the shortest repeat, as for GCDTimer; what is finer is dropped")
    func oneNanosecond() {
        let scheduler = Scheduler(after: .seconds(3_600), repeating: .nanoseconds(1))
        #expect(scheduler.repeating == .nanoseconds(1))
        let finer = Scheduler(after: .seconds(3_600), repeating: Duration(attoseconds: 1_999_999_999))
        #expect(finer.repeating == .nanoseconds(1))
        let never = Scheduler(after: .seconds(1e19), repeating: .seconds(1e19))
        #expect(never.repeating == .never)
        #expect(never.deadline == .distantFuture)
    }

    @Test("a repeat under one nanosecond traps with a message naming Scheduler")
    func underOneNanosecond() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Scheduler(after: .seconds(1), repeating: Duration(attoseconds: 999_999_999))
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("Scheduler: repeating must be nil or at least one nanosecond"))
    }
}
