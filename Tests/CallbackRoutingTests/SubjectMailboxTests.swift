import Testing

@testable import CallbackRouting

private typealias Mailbox = SubjectMailbox<Int, Never>

extension Mailbox.Event {
    fileprivate var value: Int? {
        if case .value(let value) = self { return value }
        return nil
    }

    fileprivate var isCompletion: Bool {
        if case .completion = self { return true }
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
        #expect(first?.value == 1)
        let second = mailbox.takeNext()
        #expect(second?.value == 2)
        let third = mailbox.takeNext()
        #expect(third?.value == 3)
        let afterLast = mailbox.takeNext()
        #expect(afterLast == nil)
        #expect(mailbox.drain.isIdle)
        let claimsAgain = mailbox.putClaimingDrain(4, keepingOut: true)
        #expect(claimsAgain, "an ended drain can be claimed again")
        let keptOut = mailbox.takeNext()
        #expect(keptOut == nil, "a value kept out is the caller's to deliver")
    }

    @Test("close() while a drain runs: its next look finds nothing, and the drain ends")
    func closeStopsTheRunningDrain() {
        var mailbox = Mailbox()
        let claims = mailbox.putClaimingDrain(1, keepingOut: false)
        #expect(claims)
        mailbox.put(.value(2))
        let running = mailbox.takeNext()  // the call for 1 runs now
        #expect(running?.value == 1)
        mailbox.close()
        let afterClose = mailbox.takeNext()
        #expect(afterClose == nil)
        #expect(mailbox.drain.isIdle)
        #expect(mailbox.events.isEmpty)
    }

    @Test("a closed mailbox accepts nothing, and a drain scheduled before the close need not start")
    func closedAcceptsNothing() {
        var mailbox = Mailbox()
        mailbox.put(.value(1))
        mailbox.close()
        let scheduledClaims = mailbox.claimScheduledDrain()
        #expect(!scheduledClaims)
        mailbox.put(.value(2))
        let claims = mailbox.putClaimingDrain(3, keepingOut: false)
        #expect(!claims)
        #expect(mailbox.events.isEmpty)
        #expect(mailbox.drain.isIdle)
    }

    @Test("taking the completion closes the mailbox")
    func completionCloses() {
        var mailbox = Mailbox()
        mailbox.put(.value(1))
        mailbox.put(.completion(.finished))
        let claims = mailbox.claimScheduledDrain()
        #expect(claims)
        let value = mailbox.takeNext()
        #expect(value?.value == 1)
        let completion = mailbox.takeNext()
        #expect(completion?.isCompletion == true)
        #expect(mailbox.isClosed)
        mailbox.put(.value(2))
        let afterCompletion = mailbox.takeNext()
        #expect(afterCompletion == nil)
    }
}
