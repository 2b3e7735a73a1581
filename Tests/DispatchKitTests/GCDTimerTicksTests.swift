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
        #expect(await handled.wait(timeout: patienceLimit))
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

    @Test("an iteration keeps its timer alive, and lets it go when it ends")
    func iterationKeepsTheTimer() async {
        var timer: GCDTimer? = GCDTimer(interval: 0.001)
        timer?.repeatInterval = 0.001
        timer?.start()
        var iterator: GCDTimerTicks.AsyncIterator? = timer?.ticks.makeAsyncIterator()
        let weakTimer = WeakReference(timer!)
        timer = nil
        #expect(weakTimer.isReleased == false, "the iteration does not keep the timer alive")
        #expect(await iterator?.next() != nil)
        #expect(await iterator?.next() != nil, "the timer still fires for the loop")
        iterator = nil
        #expect(await offPool { weakTimer.released() }, "the ended iteration still keeps the timer")
    }

    @Test("a loop over the ticks of a timer nobody else keeps gets its fires")
    func temporaryTimer() async {
        var count = 0
        for await _ in GCDTimer.scheduleWithInterval(0.001, repeating: 0.001, handler: {}).ticks {
            count += 1
            if count == 3 { break }
        }
        #expect(count == 3)
    }

    @Test("an iteration starts a timer that was never started, after registering: the loop gets the first fire")
    func iterationStartsANewTimer() async {
        let timer = GCDTimer(interval: 0)  // a one-shot that fires as soon as it starts
        let fires = AtomicBox(0)
        timer.handler { fires.mutate { $0 += 1 } }
        #expect(timer.isRunning == false)
        var iterator = timer.ticks.makeAsyncIterator()
        // Started: running, or (it fires at once) already fired and stopped, which a look at `isRunning` alone
        // missed once under AddressSanitizer.
        let started = await offPool { eventually { timer.isRunning || fires.value > 0 } }
        #expect(started, "the iteration did not start the new timer")
        guard started else { return }  // the loop would wait for ever
        #expect(await iterator.next() != nil, "the first fire is lost")
        #expect(await iterator.next() == nil, "a one-shot's loop ends after its fire")
    }

    @Test("a repeating timer that was never started runs for its loop until stop()")
    func loopStartsARepeatingTimer() async {
        let timer = GCDTimer(interval: 0.001)
        timer.repeatInterval = 0.001
        let fired = CountingSemaphore()
        timer.handler { fired.signal() }
        let ticks = timer.ticks
        #expect(timer.isRunning == false, "making the sequence starts nothing")
        let reader = Task {
            var count = 0
            for await _ in ticks {
                count += 1
                if count == 3 { timer.stop() }
            }
            return count
        }
        let started = await fired.wait(timeout: patienceLimit)
        #expect(started, "the loop waits for a timer that nobody starts")
        if !started { reader.cancel() }
        let readerReturned = await completes { #expect(await reader.value == (started ? 3 : 0)) }
        #expect(readerReturned)
    }

    @Test("an iteration does not resume a paused timer")
    func pausedStaysPaused() async {
        let timer = GCDTimer(interval: 3600)
        timer.start()
        timer.pause()
        let iterator = timer.ticks.makeAsyncIterator()
        #expect(timer.isRunning == false)
        timer.stop()
        _ = iterator
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
        #expect(await completes { _ = await reader.value })
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
        for _ in 0..<20 { #expect(await fired.wait(timeout: patienceLimit)) }  // 20 fires while nobody takes them
        timer.stop()
        var buffered = 0
        while await iterator.next() != nil { buffered += 1 }
        #expect(buffered == 0, "a fire not taken before stop() is not delivered after it")
    }
}
