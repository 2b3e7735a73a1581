import OperationQueuing
import TestSupport
import Testing

/// Records an issue when `condition` is false; cheaper than `#expect` in loops of millions of checks.
private func check(
    _ condition: Bool,
    _ message: @autoclosure () -> String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    if !condition { Issue.record(Comment(rawValue: message()), sourceLocation: sourceLocation) }
}

/// Drives an OperationStateMachine as the shell and its threads would, and checks the contract after every event.
///
/// It plays the owner: it keeps the attempt whose `execute()` runs, the attempts handed to a queue, and whether the
/// operation finished; events arrive in any order, as from threads racing.
private struct Driver {
    var machine = OperationStateMachine()
    /// The attempt whose `execute()` has been called and not returned.
    var executing: Int?
    /// Attempts handed to a queue, not yet begun.
    var scheduled: [Int] = []
    /// Every attempt whose `execute()` was called, in order.
    var executed: [Int] = []
    var finishes = 0
    var cancelReturned = false
    var events: [Event] = []

    /// What happened, kept for the message of a failed check.
    struct Event: CustomStringConvertible {
        let name: StaticString
        let number: Int?
        let action: OperationStateMachine.Action?

        var description: String {
            "\(self.name)(\(self.number.map(String.init) ?? ""))->\(self.action.map { "\($0)" } ?? "")"
        }
    }

    /// Applies an action as the shell does, and checks it.
    mutating func apply(_ action: OperationStateMachine.Action, _ name: StaticString, _ number: Int? = nil) {
        self.events.append(Event(name: name, number: number, action: action))
        switch action {
        case .none:
            break
        case .execute(let attempt):
            check(self.executing == nil, "attempts overlap: \(self.events)")
            check(!self.cancelReturned, "an attempt began after cancel() returned: \(self.events)")
            check(attempt == (self.executed.last ?? 0) + 1, "attempts are numbered 1, 2, 3…: \(self.events)")
            check(attempt <= self.machine.attemptLimit, "more attempts than allowed: \(self.events)")
            check(self.machine.currentAttempt == attempt, "currentAttempt is the executing one: \(self.events)")
            self.executed.append(attempt)
            self.executing = attempt
        case .scheduleAttempt(let attempt, _):
            check(!self.cancelReturned, "an attempt was scheduled after cancel() returned: \(self.events)")
            check(attempt == self.machine.currentAttempt + 1, "the next attempt is scheduled: \(self.events)")
            self.scheduled.append(attempt)
        case .finish(let wasExecuting):
            check(self.finishes == 0, "finished twice: \(self.events)")
            check(wasExecuting == self.machine.isExecuting, "finish says what executed: \(self.events)")
            self.finishes += 1
            self.machine.markFinished()
            check(self.machine.isFinished && !self.machine.isExecuting, "finished, not executing: \(self.events)")
        }
        check(
            self.machine.currentAttempt >= 1 && self.machine.currentAttempt <= self.machine.attemptLimit,
            "currentAttempt within 1…limit: \(self.events)"
        )
        if self.machine.isFinished { check(self.finishes == 1, "finished once: \(self.events)") }
    }

    /// One random event, as a thread of the operation or of its user might cause it.
    mutating func step(_ random: inout SeededRandom) {
        self.step(choice: Int.random(in: 0..<Self.choices, using: &random), &random)
    }

    /// How many kinds of event ``step(choice:_:)`` knows.
    static let choices = 11

    /// Event `choice`; `random` picks its details.
    mutating func step(choice: Int, _ random: inout SeededRandom) {
        switch choice {
        case 0:
            if let action = self.machine.start() { self.apply(action, "start") }
        case 1:
            let wasFinished = self.machine.isFinished
            let action = self.machine.cancel()
            self.apply(action, "cancel")
            self.cancelReturned = true
            if case .pending = self.machine.phase { Issue.record("pending after cancel: \(self.events)") }
            check(!self.machine.isWaitingForRetry, "still waiting for retry after cancel: \(self.events)")
            if wasFinished { check(action == .none, "cancel after finish does nothing: \(self.events)") }
        case 2, 3:
            if let attempt = self.executing {
                self.executing = nil
                self.apply(self.machine.executeReturned(attempt), "returned", attempt)
            }
        case 4, 5:
            // A finish from the running attempt, from an earlier one, or one that names no attempt.
            let number: Int? = [nil, self.machine.currentAttempt, self.machine.currentAttempt - 1].randomElement(
                using: &random
            )!
            let success = Bool.random(using: &random)
            let before = self.machine
            let action = self.machine.finish(attempt: number, success: success)
            if let number, case .running(let attempt) = before.phase, attempt.number != number {
                check(action == .none && self.machine == before, "a stale finish changed state: \(self.events)")
            }
            self.apply(action, success ? "finishTrue" : "finishFalse", number)
        case 6:
            self.apply(self.machine.retry(), "retry")
        case 7:
            self.machine.pause()
            self.events.append(Event(name: "pause", number: nil, action: nil))
        case 8:
            self.apply(self.machine.resume(), "resume")
        case 9:
            // A queue (or a delay) runs a scheduled attempt; a stale one too, now and then.
            if !self.scheduled.isEmpty {
                let attempt = self.scheduled.removeFirst()
                self.apply(self.machine.begin(attempt), "begin", attempt)
            } else {
                self.apply(self.machine.begin(self.machine.currentAttempt), "beginStale", self.machine.currentAttempt)
            }
        default:
            self.machine.setSuccess(Bool.random(using: &random))
            self.events.append(Event(name: "setSuccess", number: nil, action: nil))
        }
    }

    /// Lets every thread finish its work, without new calls but the finishes a manual-finish attempt waits for.
    mutating func settle() {
        for _ in 0..<1_000 where !self.machine.isFinished {
            if let attempt = self.executing {
                self.executing = nil
                self.apply(self.machine.executeReturned(attempt), "returned", attempt)
            } else if !self.scheduled.isEmpty {
                let attempt = self.scheduled.removeFirst()
                self.apply(self.machine.begin(attempt), "begin", attempt)
            } else if case .running = self.machine.phase {
                self.apply(self.machine.finish(attempt: self.machine.currentAttempt, success: false), "finish")
            } else if self.machine.isWaitingForRetry {
                self.machine.pause()
                self.apply(self.machine.resume(), "resume")
                self.apply(self.machine.retry(), "retry")
            } else {
                break
            }
        }
    }
}

@Suite("OperationStateMachine")
struct OperationStateMachineTests {
    @Test("random event sequences keep the contract: no overlap, numbered attempts, one finish, cancel is final")
    func randomSequences() async {
        for seed in UInt64(1)...20_000 {
            if seed % 500 == 0 { await Task.yield() }  // a long loop on the cooperative pool: let others run
            var random = SeededRandom(seed: seed)
            var driver = Driver()
            driver.machine.maximumRetries = Int.random(in: 0...4, using: &random)
            driver.machine.manualRetry = Bool.random(using: &random)
            driver.machine.manualFinish = Bool.random(using: &random)
            driver.machine.isGroup = Int.random(in: 0..<5, using: &random) == 0
            driver.machine.retryPolicy =
                Bool.random(using: &random)
                ? .immediate : .constant(.milliseconds(Int.random(in: 1...9, using: &random)))
            for _ in 0..<Int.random(in: 1...40, using: &random) { driver.step(&random) }
            let started = driver.machine.phase != .notStarted
            let cancelled = driver.machine.isCancelled
            driver.settle()
            if started {
                #expect(driver.machine.isFinished, "seed \(seed): the operation never finished: \(driver.events)")
            }
            if cancelled, started {
                #expect(driver.executed.count <= driver.machine.attemptLimit)
            }
            if driver.executed.isEmpty {
                #expect(!driver.machine.success, "seed \(seed): success without any attempt: \(driver.events)")
            }
        }
    }

    @Test("exhaustive: every sequence of 5 events keeps the contract, under manual and automatic retry and finish")
    func exhaustiveSequences() async {
        var sequence = [Int](repeating: 0, count: 5)
        var count = 0
        while true {
            // The four configurations take turns, so that each meets every sequence's neighbours.
            var driver = Driver()
            driver.machine.maximumRetries = 2
            driver.machine.manualRetry = count & 1 != 0
            driver.machine.manualFinish = count & 2 != 0
            var random = SeededRandom(seed: UInt64(count))
            for choice in sequence { driver.step(choice: choice, &random) }
            let started = driver.machine.phase != .notStarted
            driver.settle()
            if started { check(driver.machine.isFinished, "\(sequence): \(driver.events)") }
            count += 1
            if count % 2_000 == 0 { await Task.yield() }  // a long loop on the cooperative pool: let others run
            // The next sequence, as an odometer in base `Driver.choices`.
            var index = 0
            while index < sequence.count {
                sequence[index] += 1
                if sequence[index] < Driver.choices { break }
                sequence[index] = 0
                index += 1
            }
            if index == sequence.count { break }
        }
        #expect(count == 161_051)
    }
}
