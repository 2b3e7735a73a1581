import Dispatch
import DispatchKit
import TestSupport
import Testing

@Suite("GCDTimer.ticks", .timeLimit(.minutes(1)))
struct GCDTimerTicksTests {
    @Test("a repeating timer's ticks come in increasing time order, and stop() ends the loop at once")
    func repeatingUntilStop() async {
        // A fast timer fires again while the loop handles a tick: the fire taken after stop() must not arrive.
        for _ in 0..<50 {
            let timer = GCDTimer(queue: GCDQueue(name: "test.ticks"), interval: 0.000_1)
            timer.repeatInterval = 0.000_1
            timer.start()
            var times: [DispatchTime] = []
            for await time in timer.ticks {
                times.append(time)
                if times.count == 5 { timer.stop() }
            }
            #expect(times.count == 5)
            #expect(times == times.sorted())
            #expect(timer.isRunning == false)
        }
    }

    @Test("a one-shot timer yields its one fire and the loop ends; the handler still runs")
    func oneShotEnds() async {
        let handled = CountingSemaphore()
        let timer = GCDTimer(interval: 0.001)
        timer.handler { handled.signal() }
        var iterator = timer.ticks.makeAsyncIterator()
        timer.start()
        #expect(await iterator.next() != nil)
        #expect(await iterator.next() == nil)
        #expect(await handled.wait(timeout: .seconds(10)))
    }

    @Test("an iteration that starts after the timer stopped ends at once")
    func afterStop() async {
        let timer = GCDTimer(interval: 60)
        timer.start()
        timer.stop()
        var count = 0
        for await _ in timer.ticks { count += 1 }
        #expect(count == 0)
    }

    @Test("releasing the timer ends the loop: the iteration does not keep the timer alive")
    func releaseEnds() async {
        var timer: GCDTimer? = GCDTimer(interval: 3600)
        timer?.start()
        var iterator = timer!.ticks.makeAsyncIterator()
        weak let weakTimer = timer
        timer = nil
        #expect(weakTimer == nil)
        #expect(await iterator.next() == nil)
    }

    @Test("cancelling the iterating task ends the loop; the timer keeps running for others")
    func cancelEnds() async {
        let timer = GCDTimer(interval: 0.001)
        timer.repeatInterval = 0.001
        let reader = Task {
            var count = 0
            for await _ in timer.ticks { count += 1 }
            return count
        }
        timer.start()
        reader.cancel()
        _ = await reader.value
        #expect(timer.isRunning)
        var other = timer.ticks.makeAsyncIterator()
        #expect(await other.next() != nil, "a new iteration still receives fires")
        timer.stop()
    }

    @Test("a slow loop gets the latest fire, not a backlog")
    func noBacklog() async {
        let timer = GCDTimer(interval: 0.001)
        timer.repeatInterval = 0.001
        var iterator = timer.ticks.makeAsyncIterator()
        let fired = CountingSemaphore()
        timer.handler { fired.signal() }
        timer.start()
        for _ in 0..<20 { #expect(await fired.wait(timeout: .seconds(10))) }  // 20 fires while nobody takes them
        timer.stop()
        var buffered = 0
        while await iterator.next() != nil { buffered += 1 }
        #expect(buffered == 0, "a fire not taken before stop() is not delivered after it")
    }
}
