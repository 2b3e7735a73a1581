import CallbackRouting
import TestSupport
import Testing

@Suite("CallbackSubject.values lifetime", .timeLimit(.minutes(1)))
struct CallbackSubjectValuesLifetimeTests {
    @Test("a kept values sequence does not keep its subject alive: the subject goes, and a loop over it ends")
    func keptSequenceDoesNotKeepTheSubject() async {
        let holder = AtomicBox<CallbackSubject<Int, Never>?>(CallbackSubject())
        // The sequence itself is kept, as `let values = subject.values` in a user's property would be.
        guard let values = holder.value?.values else {
            Issue.record("no subject")
            return
        }
        let ended = AtomicBox(false)
        let reader = Task {
            var received: [Int] = []
            for await value in values { received.append(value) }
            ended.mutate { $0 = true }
            return received
        }
        #expect(await suspendUntil { holder.value?.subscriberCount == 1 })
        holder.value?.send(7)
        weak let released = holder.value
        holder.mutate { $0 = nil }
        #expect(released == nil, "the kept sequence keeps the subject alive")
        let endedInTime = await suspendUntil { ended.value }
        #expect(endedInTime, "the loop still waits after its subject was released")
        if !endedInTime { reader.cancel() }
        let readerReturned = await completes { #expect(await reader.value == [7]) }
        #expect(readerReturned)
        // A loop that starts after the subject is gone ends at once.
        var late = values.makeAsyncIterator()
        #expect(await late.next() == nil)
    }

    @Test("a sequence not yet iterated does not keep its subject alive; its loop gets what was sent, then ends")
    func unIteratedSequenceDoesNotKeepTheSubject() async {
        var subject: CallbackSubject<Int, Never>? = CallbackSubject()
        guard let values = subject?.values else {
            Issue.record("no subject")
            return
        }
        subject?.send(1)
        subject?.send(2)
        weak let released = subject
        subject = nil
        #expect(released == nil, "the sequence keeps the subject alive")
        var received: [Int] = []
        for await value in values { received.append(value) }  // ends: the subject finished the subscription
        #expect(received == [1, 2])
    }

    @Test("a never-iterated sequence, released, lets go of its subscription and of what the subscriber holds")
    func releasedSequenceFreesItsSubscription() {
        let subject = CallbackSubject<LifetimeProbe.Tracked, Never>()
        let probe = LifetimeProbe()
        do {
            let values = subject.values
            subject.send(probe.make())  // buffered for the loop
            withExtendedLifetime(values) {}
        }
        #expect(subject.subscriberCount == 0)
        #expect(probe.alive == 0, "the buffered value outlived the released sequence")
    }
}
