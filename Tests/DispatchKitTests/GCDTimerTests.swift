import Dispatch
import DispatchKit
import TestSupport
import Testing

@Suite("GCDTimer", .timeLimit(.minutes(1)))
struct GCDTimerTests {
    @Test("a new timer does not fire until started; then a one-shot fires once, no earlier than its interval")
    func oneShot() async throws {
        try await offPoolTest { checks in
            let fires = AtomicBox(0)
            let fired = DispatchSemaphore(value: 0)
            let timer = GCDTimer(queue: GCDQueue(name: "test.timer.once"), interval: 0.02)
            timer.handler {
                fires.mutate { $0 += 1 }
                fired.signal()
            }
            checks.expect(fired.wait(timeout: .now() + .milliseconds(100)) == .timedOut, "not started: no fire")
            checks.expect(timer.isRunning == false)
            let start = DispatchTime.now()
            timer.start()
            checks.expect(fired.wait(timeout: deadline()) == .success)
            checks.expect(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds >= 20_000_000)
            checks.expect(fired.wait(timeout: .now() + .milliseconds(100)) == .timedOut, "a one-shot fires once")
            checks.expect(fires.value == 1)
            checks.expect(timer.isRunning == false)
            timer.start()  // finished: does nothing
            checks.expect(fired.wait(timeout: .now() + .milliseconds(60)) == .timedOut)
        }
    }

    @Test("scheduleWithInterval with repeating fires repeatedly; pause stops it, start resumes it, stop is final")
    func repeating() async throws {
        try await offPoolTest { checks in
            let fired = DispatchSemaphore(value: 0)
            let timer = GCDTimer.scheduleWithInterval(
                0.01,
                onQueue: GCDQueue(name: "test.timer.repeat"),
                repeating: 0.01
            ) {
                fired.signal()
            }
            checks.expect(timer.isRunning)
            for _ in 0..<3 { checks.expect(fired.wait(timeout: deadline()) == .success) }
            timer.pause()
            timer.pause()
            checks.expect(timer.isRunning == false)
            while fired.wait(timeout: .now()) == .success {}  // a fire already queued when paused
            checks.expect(fired.wait(timeout: .now() + .milliseconds(80)) == .timedOut, "paused: no fire")
            timer.start()
            checks.expect(fired.wait(timeout: deadline()) == .success, "resumed")
            timer.stop()
            while fired.wait(timeout: .now()) == .success {}
            checks.expect(fired.wait(timeout: .now() + .milliseconds(80)) == .timedOut, "stopped: no fire")
            timer.start()
            checks.expect(fired.wait(timeout: .now() + .milliseconds(80)) == .timedOut, "stop is final")
        }
    }

    @Test("handler replaces the previous handler")
    func handlerReplaces() async throws {
        try await offPoolTest { checks in
            let log = AtomicBox<[String]>([])
            let fired = DispatchSemaphore(value: 0)
            let timer = GCDTimer(queue: GCDQueue(name: "test.timer.handler"), interval: 0.01)
            timer.handler { log.mutate { $0.append("first") } }
            timer.handler {
                log.mutate { $0.append("second") }
                fired.signal()
            }
            timer.start()
            checks.expect(fired.wait(timeout: deadline()) == .success)
            checks.expect(log.value == ["second"])
        }
    }

    @Test("a deadline timer fires at its deadline; tolerance and repeatInterval are kept")
    func deadlineAndProperties() async throws {
        try await offPoolTest { checks in
            let fired = DispatchSemaphore(value: 0)
            let timer = GCDTimer(queue: GCDQueue(name: "test.timer.deadline"), deadline: .now() + 0.02)
            checks.expect(timer.repeatInterval == nil)
            timer.tolerance = 0.001
            checks.expect(timer.tolerance == 0.001)
            timer.handler { fired.signal() }
            timer.start()
            checks.expect(fired.wait(timeout: deadline()) == .success)
        }
    }

    @Test("releasing a timer is safe in every state")
    func releaseInEveryState() async {
        await #expect(processExitsWith: .success) {
            _ = GCDTimer(interval: 1)  // never started
            let running = GCDTimer(interval: 1)
            running.start()
            let paused = GCDTimer.scheduleWithInterval(0.5) {}
            paused.pause()
            let stopped = GCDTimer.scheduleWithInterval(0.5) {}
            stopped.stop()
            let stoppedWhilePaused = GCDTimer.scheduleWithInterval(0.5) {}
            stoppedWhilePaused.pause()
            stoppedWhilePaused.stop()
            withExtendedLifetime((running, paused, stopped, stoppedWhilePaused)) {}
        }
    }
}

@Suite("GCDTimer: one-shot or repeating, and bad numbers", .timeLimit(.minutes(1)))
struct GCDTimerSchedulingTests {
    @Test("scheduleWithInterval without repeating fires once, as Eki's")
    func scheduleFiresOnce() async throws {
        try await offPoolTest { checks in
            let fires = AtomicBox(0)
            let fired = DispatchSemaphore(value: 0)
            let timer = GCDTimer.scheduleWithInterval(0.01, onQueue: GCDQueue(name: "test.timer.schedule.once")) {
                fires.mutate { $0 += 1 }
                fired.signal()
            }
            checks.expect(fired.wait(timeout: deadline()) == .success)
            checks.expect(
                fired.wait(timeout: .now() + .milliseconds(100)) == .timedOut,
                "ten intervals later, no second fire"
            )
            checks.expect(fires.value == 1)
            checks.expect(timer.isRunning == false)
            checks.expect(timer.repeatInterval == nil)
        }
    }

    @Test("a one-shot whose repeatInterval is set after start() still fires once and finishes")
    func repeatSetAfterStart() async throws {
        try await offPoolTest { checks in
            let fires = AtomicBox(0)
            let fired = DispatchSemaphore(value: 0)
            let timer = GCDTimer(queue: GCDQueue(name: "test.timer.lateRepeat"), interval: 0.02)
            timer.handler {
                fires.mutate { $0 += 1 }
                fired.signal()
            }
            timer.start()
            timer.repeatInterval = 0.01
            checks.expect(fired.wait(timeout: deadline()) == .success)
            checks.expect(fired.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
            checks.expect(fires.value == 1)
            checks.expect(timer.isRunning == false, "a one-shot that fired is finished")
        }
    }

    @Test("a repeating timer whose repeatInterval is set to nil while running keeps repeating")
    func repeatClearedWhileRunning() async throws {
        try await offPoolTest { checks in
            let fired = DispatchSemaphore(value: 0)
            let timer = GCDTimer.scheduleWithInterval(
                0.01,
                onQueue: GCDQueue(name: "test.timer.clear"),
                repeating: 0.01
            ) {
                fired.signal()
            }
            checks.expect(fired.wait(timeout: deadline()) == .success)
            timer.repeatInterval = nil
            for _ in 0..<3 { checks.expect(fired.wait(timeout: deadline()) == .success) }
            checks.expect(timer.isRunning)
            timer.stop()
        }
    }

    @Test("huge and infinite numbers mean never, without trapping")
    func hugeMeansNever() async throws {
        try await offPoolTest { checks in
            let fired = DispatchSemaphore(value: 0)
            let queue = GCDQueue(name: "test.timer.huge")
            let never = GCDTimer(queue: queue, interval: .infinity)
            never.handler { fired.signal() }
            never.tolerance = .infinity
            never.repeatInterval = 9.3e9
            never.start()
            checks.expect(never.isRunning)
            let huge = GCDTimer(queue: queue, interval: 1e300)
            huge.handler { fired.signal() }
            huge.start()
            queue.after(.infinity) { fired.signal() }
            queue.after(9.3e9) { fired.signal() }
            // The Duration spellings: too long to represent in nanoseconds (about 292 years or more) is never.
            let longest = Duration.seconds(Int64.max)
            let neverDuration = GCDTimer(queue: queue, interval: longest)
            neverDuration.handler { fired.signal() }
            neverDuration.toleranceDuration = longest
            neverDuration.start()
            queue.after(longest) { fired.signal() }
            queue.after(.seconds(9_300_000_000)) { fired.signal() }
            checks.expect(fired.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
            never.stop()
            huge.stop()
            neverDuration.stop()
        }
    }

    @Test("the Duration spellings fire as the seconds do: once, repeating, from a date, after a delay")
    func durationSpellings() async throws {
        try await offPoolTest { checks in
            let fired = DispatchSemaphore(value: 0)
            let queue = GCDQueue(name: "test.timer.duration")
            let repeating = GCDTimer.scheduleWithInterval(.milliseconds(5), onQueue: queue, repeating: .milliseconds(5))
            {
                fired.signal()
            }
            for _ in 0..<3 { checks.expect(fired.wait(timeout: deadline()) == .success) }
            checks.expect(repeating.isRunning)
            checks.expect(repeating.repeatDuration == .milliseconds(5))
            repeating.stop()
            let once = GCDTimer.scheduleWithInterval(.zero, onQueue: queue) { fired.signal() }
            checks.expect(fired.wait(timeout: deadline()) == .success)
            checks.expect(once.repeatDuration == nil)
            let dated = GCDTimer.scheduleWithDate(.now(), onQueue: queue, repeating: .milliseconds(5)) {
                fired.signal()
            }
            for _ in 0..<2 { checks.expect(fired.wait(timeout: deadline()) == .success) }
            dated.stop()
            let paused = GCDTimer(queue: queue, interval: .milliseconds(1))
            paused.handler { fired.signal() }
            paused.start()
            checks.expect(fired.wait(timeout: deadline()) == .success)
            queue.after(.milliseconds(1)) { fired.signal() }
            checks.expect(fired.wait(timeout: deadline()) == .success)
        }
    }

    @Test("repeatInterval and repeatDuration are one setting, as are tolerance and toleranceDuration")
    func durationViews() {
        let timer = GCDTimer(interval: .seconds(1))
        timer.repeatDuration = .milliseconds(1_500)
        #expect(timer.repeatInterval == 1.5)
        timer.repeatInterval = 0.25
        #expect(timer.repeatDuration == .milliseconds(250))
        timer.repeatInterval = .infinity
        #expect(timer.repeatDuration == Duration(secondsComponent: .max, attosecondsComponent: 0), "the longest")
        timer.repeatDuration = nil
        #expect(timer.repeatInterval == nil)
        #expect(timer.toleranceDuration == .zero)
        timer.toleranceDuration = .milliseconds(20)
        #expect(timer.tolerance == 0.02)
        timer.tolerance = 0.5
        #expect(timer.toleranceDuration == .milliseconds(500))
    }

    @Test("a small tolerance and a zero interval still fire")
    func zeroInterval() async throws {
        try await offPoolTest { checks in
            let fired = DispatchSemaphore(value: 0)
            let timer = GCDTimer(queue: GCDQueue(name: "test.timer.zero"), interval: 0)
            timer.tolerance = 0
            timer.handler { fired.signal() }
            timer.start()
            checks.expect(fired.wait(timeout: deadline()) == .success)
        }
    }

    /// The bad values, by which parameter they go to.
    enum BadNumber: String, CaseIterable, Sendable, Codable {
        case nanInterval, negativeInterval, nanRepeat, zeroRepeat, negativeRepeat, nanTolerance, negativeTolerance
        case nanAfter, negativeAfter, nanScheduleRepeat
        case negativeDurationInterval, zeroRepeatDuration, negativeToleranceDuration, negativeDurationAfter
        case zeroScheduleRepeatDuration, subNanosecondRepeat, subNanosecondRepeatDuration

        /// The text the trap's message must contain.
        var message: String {
            switch self {
            case .nanInterval, .negativeInterval: "GCDTimer: interval must be a number of seconds, 0 or more"
            case .nanRepeat, .zeroRepeat, .negativeRepeat, .nanScheduleRepeat, .subNanosecondRepeat:
                "GCDTimer: repeatInterval must be a number of seconds of at least one nanosecond"
            case .nanTolerance, .negativeTolerance: "GCDTimer: tolerance must be a number of seconds, 0 or more"
            case .nanAfter, .negativeAfter: "GCDQueue.after: seconds must be a number of seconds, 0 or more"
            case .negativeDurationInterval: "GCDTimer: interval must be a duration of 0 or more; got -1.0 seconds"
            case .zeroRepeatDuration, .zeroScheduleRepeatDuration:
                "GCDTimer: repeatDuration must be a duration of at least one nanosecond; got 0.0 seconds"
            case .subNanosecondRepeatDuration: "GCDTimer: repeatDuration must be a duration of at least one nanosecond"
            case .negativeToleranceDuration:
                "GCDTimer: toleranceDuration must be a duration of 0 or more; got -0.001 seconds"
            case .negativeDurationAfter: "GCDQueue.after: delay must be a duration of 0 or more; got -1.0 seconds"
            }
        }

        func misuse() {
            let timer = GCDTimer(interval: 1)
            switch self {
            case .nanInterval: _ = GCDTimer(interval: .nan)
            case .negativeInterval: _ = GCDTimer(interval: -1)
            case .nanRepeat: timer.repeatInterval = .nan
            case .zeroRepeat: timer.repeatInterval = 0
            case .negativeRepeat: timer.repeatInterval = -0.5
            case .nanTolerance: timer.tolerance = .nan
            case .negativeTolerance: timer.tolerance = -1
            case .nanAfter: GCDQueue.background.after(.nan) {}
            case .negativeAfter: GCDQueue.background.after(-1) {}
            case .nanScheduleRepeat: _ = GCDTimer.scheduleWithInterval(1, repeating: .nan) {}
            case .negativeDurationInterval: _ = GCDTimer(interval: .seconds(-1))
            case .zeroRepeatDuration: timer.repeatDuration = .zero
            case .subNanosecondRepeat: timer.repeatInterval = 1e-12  // 0 ns to Dispatch: it would fire without pause
            case .subNanosecondRepeatDuration: timer.repeatDuration = .nanoseconds(1) / 2
            case .negativeToleranceDuration: timer.toleranceDuration = .milliseconds(-1)
            case .negativeDurationAfter: GCDQueue.background.after(.seconds(-1)) {}
            case .zeroScheduleRepeatDuration: _ = GCDTimer.scheduleWithInterval(.seconds(1), repeating: .zero) {}
            }
        }
    }

    @Test("one nanosecond is the shortest repeat in every spelling: 1e-9 seconds, .nanoseconds(1), a little more")
    func shortestRepeat() {
        let timer = GCDTimer(interval: 1)
        timer.repeatInterval = 1e-9
        #expect(timer.repeatDuration == .seconds(1e-9))
        timer.repeatDuration = .nanoseconds(1)
        #expect(timer.repeatDuration == .nanoseconds(1))
        timer.repeatDuration = Duration(attoseconds: 1_999_999_999)
        #expect(timer.repeatDuration == Duration(attoseconds: 1_999_999_999))
        timer.stop()
    }

    @Test(
        "NaN, negative and zero-repeat numbers and Durations trap with a message naming the type, parameter and value",
        arguments: BadNumber.allCases
    )
    func badNumbers(bad: BadNumber) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [bad] in
            bad.misuse()
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains(bad.message))
    }
}
