import Testing

@testable import CallbackRouting

private typealias Mailbox = SubjectMailbox<Int, Never>

extension Mailbox.Step {
    fileprivate var value: Int? {
        if case .deliver(.value(let value)) = self { return value }
        return nil
    }

    fileprivate var isCompletion: Bool {
        if case .deliver(.completion) = self { return true }
        return false
    }

    /// Whether the drain ends here, without releasing the callbacks.
    fileprivate var isEnd: Bool {
        if case .end = self { return true }
        return false
    }

    fileprivate var releasesCallbacks: Bool {
        if case .endReleasingCallbacks = self { return true }
        return false
    }
}

extension Mailbox.DrainState {
    fileprivate var isIdle: Bool {
        if case .idle = self { return true }
        return false
    }
}

@Suite("SubjectMailbox: the state machine on its own")
struct SubjectMailboxTests {
    @Test("one drain at a time: the first sender claims it, later ones only put in, and it takes events in order")
    func oneDrainInOrder() {
        var mailbox = Mailbox()
        let firstClaims = mailbox.putClaimingDrain(1, keepingOut: false)
        #expect(firstClaims)
        let secondClaims = mailbox.putClaimingDrain(2, keepingOut: false)
        #expect(!secondClaims)
        mailbox.put(.value(3))
        let scheduledClaims = mailbox.claimScheduledDrain()
        #expect(!scheduledClaims, "the running drain takes it")
        let first = mailbox.takeNext()
        #expect(first.value == 1)
        let second = mailbox.takeNext()
        #expect(second.value == 2)
        let third = mailbox.takeNext()
        #expect(third.value == 3)
        let afterLast = mailbox.takeNext()
        #expect(afterLast.isEnd, "an open mailbox keeps its callbacks")
        #expect(mailbox.drain.isIdle)
        let claimsAgain = mailbox.putClaimingDrain(4, keepingOut: true)
        #expect(claimsAgain, "an ended drain can be claimed again")
        let keptOut = mailbox.takeNext()
        #expect(keptOut.isEnd, "a value kept out is the caller's to deliver")
    }

    @Test("close() while a drain runs: its next look finds nothing, and the drain ends and releases the callbacks")
    func closeStopsTheRunningDrain() {
        var mailbox = Mailbox()
        let claims = mailbox.putClaimingDrain(1, keepingOut: false)
        #expect(claims)
        mailbox.put(.value(2))
        let running = mailbox.takeNext()  // the call for 1 runs now
        #expect(running.value == 1)
        let closerReleases = mailbox.close()
        #expect(!closerReleases, "the running drain still calls the callbacks")
        let afterClose = mailbox.takeNext()
        #expect(afterClose.releasesCallbacks)
        #expect(mailbox.drain.isIdle)
        #expect(mailbox.events.isEmpty)
        let secondCloseReleases = mailbox.close()
        #expect(!secondCloseReleases, "the drain released them already")
    }

    @Test("close() with no drain running releases the callbacks, once")
    func closeWithoutDrainReleases() {
        var mailbox = Mailbox()
        let claims = mailbox.putClaimingDrain(1, keepingOut: false)
        #expect(claims)
        _ = mailbox.takeNext()
        _ = mailbox.takeNext()  // the drain ended: idle
        let firstReleases = mailbox.close()
        #expect(firstReleases)
        let secondReleases = mailbox.close()
        #expect(!secondReleases)
    }

    @Test("a closed mailbox accepts nothing, and a drain scheduled before the close need not start")
    func closedAcceptsNothing() {
        var mailbox = Mailbox()
        mailbox.put(.value(1))
        let releases = mailbox.close()
        #expect(releases, "the scheduled drain never started: nobody else holds the callbacks")
        let scheduledClaims = mailbox.claimScheduledDrain()
        #expect(!scheduledClaims)
        mailbox.put(.value(2))
        let claims = mailbox.putClaimingDrain(3, keepingOut: false)
        #expect(!claims)
        #expect(mailbox.events.isEmpty)
        #expect(mailbox.drain.isIdle)
    }

    @Test("taking the completion closes the mailbox, and the drain's next look releases the callbacks")
    func completionCloses() {
        var mailbox = Mailbox()
        mailbox.put(.value(1))
        mailbox.put(.completion(.finished))
        let claims = mailbox.claimScheduledDrain()
        #expect(claims)
        let value = mailbox.takeNext()
        #expect(value.value == 1)
        let completion = mailbox.takeNext()
        #expect(completion.isCompletion)
        #expect(mailbox.isClosed)
        let closeDuringCompletionReleases = mailbox.close()  // a cancel while the completion's call runs
        #expect(!closeDuringCompletionReleases)
        mailbox.put(.value(2))
        let afterCompletion = mailbox.takeNext()
        #expect(afterCompletion.releasesCallbacks)
    }
}
