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
        await reader.value
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
        #expect(await reader.value <= 1)
        #expect(await suspendUntil { subject.subscriberCount == 0 })
    }

    @Test("a sequence that is never iterated does not subscribe")
    func lazySubscription() {
        let subject = CallbackSubject<Int, Never>()
        let values = subject.values
        _ = values
        #expect(subject.subscriberCount == 0)
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
        #expect(await reader.value == 1)
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

    func follow(_ subject: CallbackSubject<Double, Never>) async {
        for await celsius in subject.values { self.readings.append(celsius) }
    }
}

@Suite("CallbackSubject.values isolation", .timeLimit(.minutes(1)))
struct CallbackSubjectValuesIsolationTests {
    @Test("a @MainActor loop over values compiles and receives the values")
    @MainActor
    func mainActorLoop() async {
        let subject = CallbackSubject<Double, Never>()
        let model = ThermometerModel()
        let follower = Task { await model.follow(subject) }
        #expect(await suspendUntil { subject.subscriberCount == 1 })
        subject.send(21.5)
        subject.send(completion: .finished)
        await follower.value
        #expect(model.readings == [21.5])
    }
}
