import Dispatch
import Foundation
import OperationQueuing
import Synchronization
import TestSupport
import Testing

/// ConcurrentOperation / AsyncOperation: the attempts of one operation never overlap (an attempt with
/// `manualFinish` lasts until its `finish`; an `AsyncOperation` attempt until its body returns), the operation never
/// finishes while an attempt runs, and every operation finishes — with retries, manual retry, late and duplicate
/// finishes, and `cancel()` racing the end of an attempt.
@Suite("Contract properties: operation attempts", .serialized, .timeLimit(propertyTimeLimit))
struct OperationAttemptPropertyTests {
    /// One operation under test and what was seen of it.
    final class Subject: Sendable {
        let kind: String
        let operation: ConcurrentOperation
        let attempts = OverlapDetector()
        let finishedDuringAttempt = AtomicBox(false)

        init(kind: String, operation: ConcurrentOperation) {
            self.kind = kind
            self.operation = operation
            operation.completionBlock = { [attempts, finishedDuringAttempt] in
                if attempts.isInside { finishedDuringAttempt.mutate { $0 = true } }
            }
        }

        var state: String {
            let operation = self.operation
            return "\(self.kind): attempt \(operation.currentAttempt), cancelled \(operation.isCancelled), "
                + "waiting for retry \(operation.isWaitingForRetry), executing \(operation.isExecuting), "
                + "finished \(operation.isFinished)"
        }
    }

    /// How an operation's block finds its ``Subject``: weakly, since the subject holds the operation, which holds
    /// the block.
    final class SubjectBox: Sendable {
        private let reference = AtomicBox<WeakReference<Subject>?>(nil)

        func set(_ subject: Subject) { self.reference.mutate { $0 = WeakReference(subject) } }

        var subject: Subject? { self.reference.value?.object }
    }

    static func work(_ amount: Int) {
        var sink = 0
        for index in 0..<amount { sink &+= index }
        withExtendedLifetime(sink) {}
    }

    /// Makes one operation of a random kind; `helpers` gets the work other threads do to it (retry, cancel).
    static func make(_ random: inout SeededRandom, index: Int) -> (Subject, (@Sendable () -> Void)?) {
        let amount = Int.random(in: 0..<2_000, using: &random)
        let succeeds = random.chance(40)
        let duplicate = random.chance(50)
        let delay = Int.random(in: 0..<300, using: &random)
        switch Int.random(in: 0..<6, using: &random) {
        case 0:
            let box = SubjectBox()
            let operation = ConcurrentOperation(name: "auto \(index)") { operation in
                box.subject?.attempts.section { work(amount) }
                operation.success = succeeds
            }
            operation.maximumRetries = Int.random(in: 1...4, using: &random)
            operation.retryPolicy = .immediate
            let subject = Subject(kind: "automatic retry", operation: operation)
            box.set(subject)
            return (subject, nil)
        case 1, 4:
            // Manual retry; in kind 4 a cancel() races the end of each failed attempt (issue 18.13).
            let racesCancel = random.chance(50)
            let ended = SpinFlag()
            let box = SubjectBox()
            let operation = ConcurrentOperation(name: "manual retry \(index)") { operation in
                box.subject?.attempts.section { work(amount) }
                operation.success = false
                ended.set(operation.currentAttempt)
            }
            operation.manualRetry = true
            operation.maximumRetries = 3
            let subject = Subject(
                kind: racesCancel ? "manual retry, cancel racing" : "manual retry",
                operation: operation
            )
            box.set(subject)
            let cancelAfter = Int.random(in: 1...4, using: &random)
            return (
                subject,
                {
                    for attempt in 1...3 {
                        guard ended.spin(until: attempt) else { return }
                        if racesCancel || attempt == cancelAfter {
                            operation.cancel()
                            return
                        }
                        // retry() while the attempt still runs does nothing (the contract): wait until it waits.
                        let limit = deadline()
                        while !operation.isWaitingForRetry && !operation.isFinished && DispatchTime.now() < limit {}
                        for _ in 0..<delay { ended.pause() }
                        operation.retry()
                    }
                }
            )
        case 2:
            // Manual finish with automatic retry: each attempt lasts until its finish, which comes later from another
            // thread and names its attempt; sometimes that attempt calls finish a second time, later still, when the
            // next attempt may already run (issue 18.8).
            let box = SubjectBox()
            let operation = ConcurrentOperation(name: "manual finish \(index)") { operation in
                guard let subject = box.subject else { return }
                let attempt = operation.currentAttempt
                subject.attempts.begin()
                DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(amount / 4)) {
                    subject.attempts.end()
                    operation.finish(attempt: attempt, success: succeeds)
                    if duplicate {
                        DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(delay)) {
                            operation.finish(attempt: attempt, success: false)
                        }
                    }
                }
            }
            operation.manualFinish = true
            operation.maximumRetries = Int.random(in: 2...3, using: &random)
            operation.retryPolicy = .immediate
            let subject = Subject(kind: "manual finish" + (duplicate ? ", duplicate finish" : ""), operation: operation)
            box.set(subject)
            return (subject, nil)
        case 3:
            // An async body that suspends and works between suspensions, then succeeds or throws. (A body that calls
            // the inherited finish(success:) traps: AsyncOperationTests covers that misuse with an exit test.)
            let box = SubjectBox()
            let operation = AsyncOperation(name: "async \(index)") { _ in
                guard let subject = box.subject else { return }
                subject.attempts.begin()
                defer { subject.attempts.end() }
                await Task.yield()
                if duplicate {
                    work(amount)
                    await Task.yield()
                }
                if !succeeds { throw CancellationError() }
            }
            operation.maximumRetries = Int.random(in: 1...3, using: &random)
            operation.retryPolicy = .immediate
            let subject = Subject(kind: "async" + (duplicate ? ", work between suspensions" : ""), operation: operation)
            box.set(subject)
            return (subject, nil)
        default:
            // Automatic retry an hour later, cancelled as the first attempt ends: it must finish at once (18.13).
            let ended = SpinFlag()
            let box = SubjectBox()
            let operation = ConcurrentOperation(name: "hour retry \(index)") { operation in
                box.subject?.attempts.section { work(amount) }
                operation.success = false
                ended.set(1)
            }
            operation.maximumRetries = 2
            operation.retryPolicy = .constant(.seconds(3_600))
            let subject = Subject(kind: "retry in an hour, cancelled", operation: operation)
            box.set(subject)
            return (
                subject,
                {
                    guard ended.spin(until: 1) else { return }
                    for _ in 0..<delay { ended.pause() }
                    operation.cancel()
                }
            )
        }
    }

    @Test("the attempts of one operation never overlap, it never finishes mid-attempt, and every operation finishes")
    func attemptsNeverOverlap() async {
        let failures = PropertyFailures()
        await offPool {
            var random = PropertyRun.random(40)
            let rounds = PropertyRun.rounds(8)
            var seen = Set<String>()
            for round in 0..<rounds {
                let queuer = Queuer(name: "props.operations.\(round)", maxConcurrentOperationCount: 4)
                var subjects: [Subject] = []
                for index in 0..<24 {
                    let (subject, helper) = Self.make(&random, index: index)
                    subjects.append(subject)
                    if let helper { onNewThread(helper) }
                    queuer.addOperation(subject.operation)
                }
                // A hang is what this bound is for: on two busy cores, with every other suite running, a round of 24
                // operations has taken over 3 s, so it bounds the time in which no operation finishes, not the round.
                _ = waitForProgress(progress: { subjects.count { $0.operation.isFinished } }) {
                    subjects.allSatisfy { $0.operation.isFinished }
                }
                for subject in subjects {
                    var rule: String?
                    if !subject.operation.isFinished {
                        rule = "every operation finishes (none finished for \(stallSeconds) s)"
                    } else if subject.attempts.overlaps > 0 {
                        rule = "the attempts of one operation never overlap (\(subject.attempts.overlaps) overlaps)"
                    } else if subject.finishedDuringAttempt.value {
                        rule = "an operation never finishes while one of its attempts runs"
                    }
                    // One issue per rule and kind of operation, so that one run shows every distinct break.
                    if let rule, seen.insert(String(rule.prefix { $0 != "(" }) + subject.kind).inserted {
                        failures.record((PropertyRun.failure(rule, round: round) + " — " + subject.state))
                    }
                }
            }
        }
        report(failures)
    }

    @Test(
        "a cancel() racing the end of a failed attempt never leaves the operation unfinished (manual and timed retry)"
    )
    func cancelRacingAttemptEnd() async {
        let failures = PropertyFailures()
        await offPool {
            let random = PropertyRun.random(41)
            let perThread = PropertyRun.rounds(150)
            let queuer = Queuer(name: "props.operations.cancel", maxConcurrentOperationCount: 4)
            let seeds = (0..<4).map { random.derived($0) }
            let stuck = AtomicBox<[String]>([])
            let finished = runOnThreads(4) { index in
                var random = seeds[index]
                for number in 0..<perThread {
                    let ended = SpinFlag()
                    let manual = random.chance(70)
                    let operation = ConcurrentOperation(name: "cancel race \(index).\(number)") { operation in
                        operation.success = false
                        ended.set(1)
                    }
                    if manual {
                        operation.manualRetry = true
                    } else {
                        operation.retryPolicy = .constant(.seconds(3_600))
                    }
                    queuer.addOperation(operation)
                    guard ended.spin(until: 1) else { break }
                    for _ in 0..<Int.random(in: 0..<300, using: &random) { ended.pause() }
                    operation.cancel()
                    let limit = deadline()
                    while !operation.isFinished && DispatchTime.now() < limit { Thread.sleep(forTimeInterval: 0.000_1) }
                    if !operation.isFinished {
                        let state =
                            "\(manual ? "manual retry" : "retry in an hour"), op \(index).\(number): cancelled "
                            + "\(operation.isCancelled), waiting for retry \(operation.isWaitingForRetry)"
                        stuck.mutate { $0.append(state) }
                        return
                    }
                }
            }
            failures.expect(finished, "\(PropertyRun.failure("the workers return"))")
            let unfinished = stuck.value
            failures.expect(
                unfinished.isEmpty,
                "\(PropertyRun.failure("every operation finishes after cancel()")): not within \(patienceSeconds) s: \(unfinished)"
            )
        }
        report(failures)
    }
}
