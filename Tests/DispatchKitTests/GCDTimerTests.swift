import Dispatch
import DispatchKit
import TestSupport
import Testing

@Suite("GCDTimer", .timeLimit(.minutes(1)))
struct GCDTimerTests {
    @Test("a new timer does not fire until started; then a one-shot fires once, no earlier than its interval")
    func oneShot() {
        let fires = AtomicBox(0)
        let fired = DispatchSemaphore(value: 0)
        let timer = GCDTimer(queue: GCDQueue(name: "test.timer.once"), interval: 0.02)
        timer.handler {
            fires.mutate { $0 += 1 }
            fired.signal()
        }
        #expect(fired.wait(timeout: .now() + .milliseconds(100)) == .timedOut, "not started: no fire")
        #expect(timer.isRunning == false)
        let start = DispatchTime.now()
        timer.start()
        #expect(fired.wait(timeout: deadline()) == .success)
        #expect(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds >= 20_000_000)
        #expect(fired.wait(timeout: .now() + .milliseconds(100)) == .timedOut, "a one-shot fires once")
        #expect(fires.value == 1)
        #expect(timer.isRunning == false)
        timer.start()  // finished: does nothing
        #expect(fired.wait(timeout: .now() + .milliseconds(60)) == .timedOut)
    }

    @Test("scheduleWithInterval fires repeatedly; pause stops it, start resumes it, stop is final")
    func repeating() {
        let fired = DispatchSemaphore(value: 0)
        let timer = GCDTimer.scheduleWithInterval(0.01, onQueue: GCDQueue(name: "test.timer.repeat")) {
            fired.signal()
        }
        #expect(timer.isRunning)
        for _ in 0..<3 { #expect(fired.wait(timeout: deadline()) == .success) }
        timer.pause()
        timer.pause()
        #expect(timer.isRunning == false)
        while fired.wait(timeout: .now()) == .success {}  // a fire already queued when paused
        #expect(fired.wait(timeout: .now() + .milliseconds(80)) == .timedOut, "paused: no fire")
        timer.start()
        #expect(fired.wait(timeout: deadline()) == .success, "resumed")
        timer.stop()
        while fired.wait(timeout: .now()) == .success {}
        #expect(fired.wait(timeout: .now() + .milliseconds(80)) == .timedOut, "stopped: no fire")
        timer.start()
        #expect(fired.wait(timeout: .now() + .milliseconds(80)) == .timedOut, "stop is final")
    }

    @Test("handler replaces the previous handler")
    func handlerReplaces() {
        let log = AtomicBox<[String]>([])
        let fired = DispatchSemaphore(value: 0)
        let timer = GCDTimer(queue: GCDQueue(name: "test.timer.handler"), interval: 0.01)
        timer.handler { log.mutate { $0.append("first") } }
        timer.handler {
            log.mutate { $0.append("second") }
            fired.signal()
        }
        timer.start()
        #expect(fired.wait(timeout: deadline()) == .success)
        #expect(log.value == ["second"])
    }

    @Test("a deadline timer fires at its deadline; tolerance and repeatInterval are kept")
    func deadlineAndProperties() {
        let fired = DispatchSemaphore(value: 0)
        let timer = GCDTimer(queue: GCDQueue(name: "test.timer.deadline"), deadline: .now() + 0.02)
        #expect(timer.repeatInterval == nil)
        timer.tolerance = 0.001
        #expect(timer.tolerance == 0.001)
        timer.handler { fired.signal() }
        timer.start()
        #expect(fired.wait(timeout: deadline()) == .success)
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
