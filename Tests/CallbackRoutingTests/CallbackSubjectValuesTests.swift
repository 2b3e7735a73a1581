import CallbackRouting
import Dispatch
import TestSupport
import Testing

private struct Broken: Error, Equatable {}

@Suite("CallbackSubject.values", .timeLimit(.minutes(1)))
struct CallbackSubjectValuesTests {
    @Test("a loop receives the values sent after it started, in order, and ends with .finished")
    func valuesThenFinish() async {
        let subject = CallbackSubject<Int, Never>()
        subject.send(-1)  // before any iteration: nobody receives it
        var iterator = subject.values.makeAsyncIterator()
        #expect(subject.subscriberCount == 1, "the iteration subscribed when it started")
        for value in 0..<100 { subject.send(value) }
        subject.send(completion: .finished)
        var received: [Int] = []
        while let value = await iterator.next() { received.append(value) }
        #expect(received == Array(0..<100))
        #expect(subject.subscriberCount == 0)
    }

    @Test("a failure is thrown from the loop, typed, after the values sent before it")
    func failureIsThrown() async {
        let subject = CallbackSubject<String, Broken>()
        var iterator = subject.values.makeAsyncIterator()
        subject.send("a")
        subject.send(completion: .failure(Broken()))
        subject.send("ignored")
        var received: [String] = []
        do throws(Broken) {
            while let value = try await iterator.next() { received.append(value) }
            Issue.record("the loop ended without throwing")
        } catch {
            #expect(error == Broken())
        }
        #expect(received == ["a"])
    }

    @Test("an iteration that starts after the completion ends at once")
    func afterCompletion() async {
        let subject = CallbackSubject<Int, Never>()
        subject.send(completion: .finished)
        var count = 0
        for await _ in subject.values { count += 1 }
        #expect(count == 0)
    }

    @Test("leaving the loop cancels the subscription")
    func breakCancels() async {
        let subject = CallbackSubject<Int, Never>()
        let reader = Task {
            for await value in subject.values where value == 3 { break }
        }
        #expect(await suspendUntil { subject.subscriberCount == 1 })
        for value in 0..<5 { subject.send(value) }
        #expect(await completes { await reader.value })
        #expect(await suspendUntil { subject.subscriberCount == 0 })
    }

    @Test("cancelling the iterating task ends the loop and cancels the subscription")
    func taskCancelCancels() async {
        let subject = CallbackSubject<Int, Never>()
        let reader = Task {
            var count = 0
            for await _ in subject.values { count += 1 }
            return count
        }
        #expect(await suspendUntil { subject.subscriberCount == 1 })
        subject.send(1)
        reader.cancel()
        let readerReturned = await completes { #expect(await reader.value <= 1) }
        #expect(readerReturned)
        #expect(await suspendUntil { subject.subscriberCount == 0 })
    }

    @Test("values sent after `values` returned, before the loop began, reach the loop")
    func valuesSentBeforeTheLoopBegins() async {
        let subject = CallbackSubject<Int, Never>()
        subject.send(-1)  // before the sequence: nobody receives it
        let values = subject.values
        #expect(subject.subscriberCount == 1, "the sequence subscribed when it was made")
        subject.send(1)
        subject.send(2)
        subject.send(completion: .finished)
        var received: [Int] = []
        for await value in values { received.append(value) }
        #expect(received == [1, 2])
    }

    @Test("a later iteration of the same sequence subscribes when it starts; the first keeps what came before")
    func laterIterationsSubscribeAnew() async {
        let subject = CallbackSubject<Int, Never>()
        let values = subject.values
        subject.send(1)
        var first = values.makeAsyncIterator()
        var second = values.makeAsyncIterator()
        #expect(subject.subscriberCount == 2)
        subject.send(2)
        subject.send(completion: .finished)
        var received: ([Int], [Int]) = ([], [])
        while let value = await first.next() { received.0.append(value) }
        while let value = await second.next() { received.1.append(value) }
        #expect(received.0 == [1, 2])
        #expect(received.1 == [2])
    }

    @Test("a sequence that is never iterated unsubscribes when its last copy is released")
    func neverIteratedUnsubscribesOnRelease() {
        let subject = CallbackSubject<Int, Never>()
        var values: CallbackSubjectValues<Int, Never>? = subject.values
        var copy = values
        #expect(subject.subscriberCount == 1)
        subject.send(1)
        values = nil
        #expect(subject.subscriberCount == 1, "a copy still holds the subscription")
        copy = nil
        #expect(subject.subscriberCount == 0, "the released sequence still holds its subscription")
        subject.send(2)
        _ = (values, copy)
    }

    @Test("buffering policies hold for the values sent before the loop began")
    func bufferingPoliciesBeforeTheLoop() async {
        let subject = CallbackSubject<Int, Never>()
        let oldest = subject.values(bufferingPolicy: .bufferingOldest(2))
        let newest = subject.values(bufferingPolicy: .bufferingNewest(2))
        let nothing = subject.values(bufferingPolicy: .bufferingNewest(0))
        let all = subject.values(bufferingPolicy: .unbounded)
        for value in 1...5 { subject.send(value) }
        subject.send(completion: .finished)
        var received: ([Int], [Int], [Int], [Int]) = ([], [], [], [])
        for await value in oldest { received.0.append(value) }
        for await value in newest { received.1.append(value) }
        for await value in nothing { received.2.append(value) }
        for await value in all { received.3.append(value) }
        #expect(received.0 == [1, 2])
        #expect(received.1 == [4, 5])
        #expect(received.2 == [])
        #expect(received.3 == [1, 2, 3, 4, 5])
    }

    @Test("buffering policies keep the oldest or the newest values the loop has not taken")
    func bufferingPolicies() async {
        let subject = CallbackSubject<Int, Never>()
        var oldest = subject.values(bufferingPolicy: .bufferingOldest(2)).makeAsyncIterator()
        var newest = subject.values(bufferingPolicy: .bufferingNewest(2)).makeAsyncIterator()
        var all = subject.values(bufferingPolicy: .unbounded).makeAsyncIterator()
        for value in 1...5 { subject.send(value) }
        subject.send(completion: .finished)
        var received: ([Int], [Int], [Int]) = ([], [], [])
        while let value = await oldest.next() { received.0.append(value) }
        while let value = await newest.next() { received.1.append(value) }
        while let value = await all.next() { received.2.append(value) }
        #expect(received.0 == [1, 2])
        #expect(received.1 == [4, 5])
        #expect(received.2 == [1, 2, 3, 4, 5])
    }

    @Test("a negative buffer limit traps with a message naming CallbackSubject.values")
    func negativeLimitTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = CallbackSubject<Int, Never>().values(bufferingPolicy: .bufferingNewest(-1))
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("CallbackSubject.values: bufferingNewest limit must be 0 or more, got -1"))
    }

    @Test("values from several sending threads all arrive, each sender's in its order")
    func concurrentSenders() async {
        let subject = CallbackSubject<Int, Never>()
        var iterator = subject.values.makeAsyncIterator()
        let perSender = 2_000
        let senders = contendingThreads
        let sent = await runOnThreadsOffPool(senders) { sender in
            for index in 0..<perSender { subject.send(sender * perSender + index) }
        }
        #expect(sent)
        subject.send(completion: .finished)
        var lastBySender = [Int](repeating: -1, count: senders)
        var count = 0
        while let value = await iterator.next() {
            let sender = value / perSender
            #expect(value > lastBySender[sender], "sender \(sender) out of order")
            lastBySender[sender] = value
            count += 1
        }
        #expect(count == senders * perSender)
    }

    @Test("completing from another thread while a loop waits ends the loop")
    func completeWhileWaiting() async {
        let subject = CallbackSubject<Int, Never>()
        let reader = Task {
            var count = 0
            for await _ in subject.values { count += 1 }
            return count
        }
        #expect(await suspendUntil { subject.subscriberCount == 1 })
        onNewThread {
            subject.send(7)
            subject.send(completion: .finished)
        }
        let readerReturned = await completes { #expect(await reader.value == 1) }
        #expect(readerReturned)
    }

    @Test("a loop ends, as finished, when the subject is released without a completion, after the values sent before")
    func endsWhenTheSubjectIsReleased() async throws {
        let holder = AtomicBox<CallbackSubject<Int, Broken>?>(CallbackSubject())
        let ended = AtomicBox(false)
        let reader = Task { () -> Result<[Int], Broken> in
            // The loop holds only its iterator, as a `for await` over `subject.values` does.
            guard var iterator = holder.mutate({ $0?.values.makeAsyncIterator() }) else { return .success([]) }
            var received: [Int] = []
            do throws(Broken) {
                while let value = try await iterator.next() { received.append(value) }
            } catch {
                return .failure(error)
            }
            ended.mutate { $0 = true }
            return .success(received)
        }
        #expect(await suspendUntil { holder.value?.subscriberCount == 1 })
        holder.value?.send(1)
        holder.value?.send(2)
        weak let released = holder.value
        holder.mutate { $0 = nil }
        #expect(released == nil, "the iteration keeps the subject alive")
        let endedInTime = await suspendUntil { ended.value }
        #expect(endedInTime, "the loop still waits after its subject was released")
        if !endedInTime { reader.cancel() }
        #expect(try await reader.value.get() == [1, 2])
    }
}

/// `values` from a @MainActor type: the loop's body may touch main-actor state (a compile-time check).
@MainActor
private final class ThermometerModel {
    var readings: [Double] = []

    func follow(_ readings: CallbackSubjectValues<Double, Never>) async {
        for await celsius in readings { self.readings.append(celsius) }
    }
}

@Suite("CallbackSubject.values isolation", .timeLimit(.minutes(1)))
struct CallbackSubjectValuesIsolationTests {
    @Test("a @MainActor loop over values compiles, and receives the values sent before its task began")
    @MainActor
    func mainActorLoop() async {
        let subject = CallbackSubject<Double, Never>()
        let model = ThermometerModel()
        let readings = subject.values
        let follower = Task { await model.follow(readings) }
        // The task cannot begin before this test suspends (both are on the main actor): the sequence keeps the values.
        subject.send(21.5)
        subject.send(22.0)
        subject.send(completion: .finished)
        #expect(await completes { await follower.value })
        #expect(model.readings == [21.5, 22.0])
    }
}
