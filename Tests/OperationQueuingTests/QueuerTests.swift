import Dispatch
import Foundation
import OperationQueuing
import TestSupport
import Testing

/// An operation that records its attempts in a shared log.
private func logging(_ label: String, _ log: AtomicBox<[String]>, succeed: Bool = true) -> ConcurrentOperation {
    ConcurrentOperation(name: label) { operation in
        log.mutate { $0.append(label) }
        operation.success = succeed
    }
}

/// The blocking wait, called from a synchronous context (an async caller would get the `async` overload), off the
/// cooperative pool.
private func blockUntilFinished(_ queuer: Queuer) {
    queuer.waitUntilAllOperationsAreFinished()
}

/// What happened in a chain, in the order it happened: the position in the log is the sequence number.
private enum ChainEvent: Equatable, Sendable {
    case start(Int)
    case end(Int)
    case completion
}

/// A log of chain events, appended under one lock, so that its order is the order the events happened in.
private final class ChainHistory: Sendable {
    private let events = AtomicBox<[ChainEvent]>([])

    func record(_ event: ChainEvent) {
        self.events.mutate { $0.append(event) }
    }

    var value: [ChainEvent] { self.events.value }

    /// What breaks a chain's order: a link that started before an earlier link had ended (or before it started),
    /// a link that started twice or never ended, a completion that ran twice or not last.
    var problems: [String] {
        let events = self.value
        var starts: [Int: Int] = [:]
        var ends: [Int: Int] = [:]
        var completions: [Int] = []
        var problems: [String] = []
        for (sequence, event) in events.enumerated() {
            switch event {
            case .start(let link):
                if starts.updateValue(sequence, forKey: link) != nil { problems.append("link \(link) started twice") }
            case .end(let link):
                ends[link] = sequence
            case .completion:
                completions.append(sequence)
            }
        }
        for (link, start) in starts {
            guard let end = ends[link] else {
                problems.append("link \(link) started and never ended")
                continue
            }
            for (earlier, earlierStart) in starts where earlier < link {
                let earlierEnd = ends[earlier] ?? Int.max
                if earlierStart > start || earlierEnd > start {
                    problems.append(
                        "link \(link) started (#\(start)) before link \(earlier) had ended (#\(earlierEnd))"
                    )
                }
            }
            if let completion = completions.first, completion < end {
                problems.append("the completion (#\(completion)) ran before link \(link) had ended (#\(end))")
            }
        }
        if completions.count > 1 { problems.append("the completion ran \(completions.count) times") }
        return problems
    }
}

/// The kinds of operation a chain link can be.
private enum LinkKind: CaseIterable {
    case concurrent, block, async
}

/// A chain link that records its start and end in `history`, and works for `work` seconds in between.
private func chainLink(
    _ index: Int,
    _ kind: LinkKind,
    _ history: ChainHistory,
    work: TimeInterval,
    cancelsItself: Bool = false
) -> Operation {
    switch kind {
    case .concurrent:
        return ConcurrentOperation(name: "link \(index)") { operation in
            history.record(.start(index))
            if cancelsItself { operation.cancel() }
            if work > 0 { Thread.sleep(forTimeInterval: work) }  // workload, so that an overtaking link shows
            history.record(.end(index))
        }
    case .block:
        let operation = BlockOperation {
            history.record(.start(index))
            if work > 0 { Thread.sleep(forTimeInterval: work) }
            history.record(.end(index))
        }
        operation.name = "link \(index)"
        return operation
    case .async:
        return AsyncOperation(name: "link \(index)") { _ in
            history.record(.start(index))
            if work > 0 { try? await Task.sleep(for: .microseconds(Int(work * 1_000_000))) }
            history.record(.end(index))
        }
    }
}

@Suite("Queuer", .timeLimit(.minutes(1)))
struct QueuerTests {
    @Test("chains run in array order with the completion last; the variadic overload too")
    func chains() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.chain", maxConcurrentOperationCount: 4)
            let log = AtomicBox<[String]>([])
            let done = DispatchSemaphore(value: 0)
            queuer.addChainedOperations([logging("a", log), logging("b", log), logging("c", log)]) {
                log.mutate { $0.append("done") }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(log.value == ["a", "b", "c", "done"])

            log.mutate { $0 = [] }
            queuer.addChainedOperations(logging("x", log), logging("y", log)) {
                log.mutate { $0.append("done") }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(log.value == ["x", "y", "done"])
        }
    }

    @Test(
        "a link cancelled before it starts lets no later link overtake an earlier one, at every position",
        arguments: 0..<4
    )
    func cancelledLinkKeepsTheOrder(cancelled: Int) async throws {
        try await offPoolTest { checks in
            for variadic in [false, true] {
                let queuer = Queuer(name: "test.chain.cancelled", maxConcurrentOperationCount: 4)
                let history = ChainHistory()
                let links = (0..<4).map { chainLink($0, .concurrent, history, work: 0.02) }
                links[cancelled].cancel()
                let done = DispatchSemaphore(value: 0)
                let completion: @Sendable () -> Void = {
                    history.record(.completion)
                    done.signal()
                }
                if variadic {
                    queuer.addChainedOperations(links[0], links[1], links[2], links[3], completionHandler: completion)
                } else {
                    queuer.addChainedOperations(links, completionHandler: completion)
                }
                checks.expect(done.wait(timeout: deadline()) == .success)
                checks.expect(eventually { queuer.operationCount == 0 })
                checks.expect(history.problems == [], "link \(cancelled) cancelled, variadic \(variadic)")
                let expected = (0..<4).filter { $0 != cancelled }.flatMap { [ChainEvent.start($0), .end($0)] }
                checks.expect(
                    history.value == expected + [.completion],
                    "link \(cancelled) cancelled, variadic \(variadic)"
                )
            }
        }
    }

    @Test("several links cancelled, or all of them: the rest run in order, and the completion still runs last")
    func severalCancelledLinks() async throws {
        try await offPoolTest { checks in
            for cancelled in [[1, 2], [0, 2, 4], [1, 3, 4], [0, 1, 2, 3, 4]] {
                let queuer = Queuer(name: "test.chain.several")
                let history = ChainHistory()
                let links = (0..<5).map { chainLink($0, .block, history, work: 0.01) }
                for index in cancelled { links[index].cancel() }
                let done = DispatchSemaphore(value: 0)
                queuer.addChainedOperations(links) {
                    history.record(.completion)
                    done.signal()
                }
                checks.expect(done.wait(timeout: deadline()) == .success)
                checks.expect(history.problems == [], "cancelled \(cancelled)")
                let expected = (0..<5).filter { !cancelled.contains($0) }.flatMap { [ChainEvent.start($0), .end($0)] }
                checks.expect(history.value == expected + [.completion], "cancelled \(cancelled)")
            }
        }
    }

    @Test("cancelAll in the middle of a chain: no later link starts, and the completion does not run")
    func cancelAllMidChain() async throws {
        try await offPoolTest { checks in
            for _ in 0..<5 {
                let queuer = Queuer(name: "test.chain.cancelall", maxConcurrentOperationCount: 3)
                let history = ChainHistory()
                let entered = DispatchSemaphore(value: 0)
                let release = DispatchSemaphore(value: 0)
                let first = chainLink(0, .concurrent, history, work: 0)
                let blocking = ConcurrentOperation(name: "link 1") { _ in
                    history.record(.start(1))
                    entered.signal()
                    hold(until: release)
                    history.record(.end(1))
                }
                let rest = (2..<6).map { chainLink($0, .concurrent, history, work: 0) }
                queuer.addChainedOperations([first, blocking] + rest) { history.record(.completion) }
                checks.expect(entered.wait(timeout: deadline()) == .success)
                queuer.cancelAll()
                // The cancelled links finish at once, while link 1 still runs; give them the chance to overtake it.
                checks.expect(eventually { rest.allSatisfy(\.isFinished) })
                release.signal()
                checks.expect(eventually { queuer.operationCount == 0 })
                checks.expect(history.problems == [])
                checks.expect(history.value == [.start(0), .end(0), .start(1), .end(1)])
            }
        }
    }

    @Test("after cancelAll() a completion handler never runs; code after await waitForAll() does, once all finished")
    func doneFinishedOrCancelled() async throws {
        let queuer = Queuer(name: "test.completion.cancelall", maxConcurrentOperationCount: 1)
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = AtomicBox(0)
        let handlerRan = AtomicBox(false)
        queuer.addOperation {
            entered.signal()
            hold(until: release)
            finished.mutate { $0 += 1 }
        }
        queuer.addOperation { finished.mutate { $0 += 1 } }
        queuer.addCompletionHandler { handlerRan.mutate { $0 = true } }
        #expect(await offPool { entered.wait(timeout: deadline()) } == .success)
        queuer.cancelAll()
        release.signal()
        #expect(await completes { await queuer.waitForAll() })
        // The running operation finished its body; the queued one was cancelled; so was the handler. (Finished, not
        // yet removed: the queue drops a finished operation from its list a moment later, so its count is not read.)
        #expect(finished.value == 1)
        #expect(!handlerRan.value)
    }

    @Test("a link that cancels itself while it runs does not stop its chain")
    func selfCancellingLink() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.chain.selfcancel")
            let history = ChainHistory()
            let links = (0..<3).map { chainLink($0, .concurrent, history, work: 0, cancelsItself: $0 == 1) }
            let done = DispatchSemaphore(value: 0)
            queuer.addChainedOperations(links) {
                history.record(.completion)
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(history.value == [.start(0), .end(0), .start(1), .end(1), .start(2), .end(2), .completion])
        }
    }

    @Test("random chains with random cancellations, before and during the run, keep their order")
    func randomChainsKeepTheirOrder() async {
        let seed = UInt64(DispatchTime.now().uptimeNanoseconds)
        var random = SeededRandom(seed: seed)
        for round in 0..<150 {
            let limit = [1, 2, 4, OperationQueue.defaultMaxConcurrentOperationCount].randomElement(using: &random)!
            let queuer = Queuer(name: "test.chain.random", maxConcurrentOperationCount: limit)
            let history = ChainHistory()
            let count = Int.random(in: 1...8, using: &random)
            let links = (0..<count).map { index in
                chainLink(
                    index,
                    LinkKind.allCases.randomElement(using: &random)!,
                    history,
                    work: [0, 0, 0.000_2, 0.002].randomElement(using: &random)!,
                    cancelsItself: Int.random(in: 0..<10, using: &random) == 0
                )
            }
            var cancelledBefore: Set<Int> = []
            for index in 0..<count where Int.random(in: 0..<4, using: &random) == 0 {
                links[index].cancel()
                cancelledBefore.insert(index)
            }
            let cancelledDuring = (0..<count).filter { _ in Int.random(in: 0..<5, using: &random) == 0 }
            let cancelsAll = Int.random(in: 0..<10, using: &random) == 0
            let pause = Double.random(in: 0...0.002, using: &random)
            let withCompletion = Bool.random(using: &random)
            let variadic = count == 3 && Bool.random(using: &random)
            let label = "seed \(seed), round \(round)"
            let record: @Sendable () -> Void = { history.record(.completion) }
            let completion = withCompletion ? record : nil
            if variadic {
                queuer.addChainedOperations(links[0], links[1], links[2], completionHandler: completion)
            } else {
                queuer.addChainedOperations(links, completionHandler: completion)
            }
            if !cancelledDuring.isEmpty || cancelsAll {
                try? await Task.sleep(for: .seconds(pause))  // a random moment of the run, not a synchronisation
                for index in cancelledDuring { links[index].cancel() }
                if cancelsAll { queuer.cancelAll() }
            }
            // Waits without blocking a thread: the async links resume on the cooperative pool.
            #expect(await suspendUntil { queuer.operationCount == 0 }, "\(label): the chain never drained")
            let events = history.value
            #expect(history.problems == [], "\(label): \(events)")
            for index in cancelledBefore {
                #expect(!events.contains(.start(index)), "\(label): link \(index) was cancelled before it started")
            }
            if withCompletion, cancelledDuring.isEmpty, !cancelsAll {
                #expect(events.last == .completion, "\(label): \(events)")
                let expected = (0..<count).filter { !cancelledBefore.contains($0) }
                    .flatMap { [ChainEvent.start($0), .end($0)] }
                #expect(events == expected + [.completion], "\(label)")
            }
        }
    }

    @Test("addCompletionHandler waits for every operation added before it, also beside cancelled ones")
    func completionHandlerBesideCancelledOperations() async throws {
        try await offPoolTest { checks in
            for _ in 0..<5 {
                let queuer = Queuer(name: "test.completion.cancelled", maxConcurrentOperationCount: 4)
                let history = ChainHistory()
                let links = (0..<4).map { chainLink($0, .concurrent, history, work: 0.02) }
                links[1].cancel()
                queuer.addChainedOperations(links)
                let lone = ConcurrentOperation { _ in history.record(.start(9)) }
                lone.cancel()
                queuer.addOperation(lone)
                let done = DispatchSemaphore(value: 0)
                queuer.addCompletionHandler {
                    history.record(.completion)
                    done.signal()
                }
                checks.expect(done.wait(timeout: deadline()) == .success)
                checks.expect(history.problems == [])
                checks.expect(
                    history.value == [.start(0), .end(0), .start(2), .end(2), .start(3), .end(3), .completion]
                )
            }
        }
    }

    @Test("cancelled links and completion handlers released while an operation runs are safe (own process)")
    func cancelledDependentsReleasedWhileRunning() async {
        // Foundation on Linux keeps an operation's dependents by unretained pointer. A dependent that is cancelled
        // finishes at once and is released by its queue; when the running operation then finishes, it must not
        // find that dependent freed.
        await #expect(processExitsWith: .success) {
            for _ in 0..<300 {
                let started = DispatchSemaphore(value: 0)
                let release = DispatchSemaphore(value: 0)
                let finished = DispatchSemaphore(value: 0)
                do {
                    let queuer = Queuer(name: "test.release.dependents", maxConcurrentOperationCount: 2)
                    let running = ConcurrentOperation { _ in
                        started.signal()
                        hold(until: release)
                    }
                    running.completionBlock = { finished.signal() }
                    let links: [Operation] = [running] + (0..<3).map { _ in ConcurrentOperation { _ in } }
                    queuer.addChainedOperations(links) {}
                    guard started.wait(timeout: deadline()) == .success else { exit(2) }
                    queuer.addCompletionHandler {}
                    queuer.cancelAll()
                    // Until the cancelled ones have finished and left the queue: only `running` is left.
                    guard eventually({ queuer.operationCount == 1 }) else { exit(3) }
                }
                // Reuse the memory of whatever was released, so that a dangling pointer leads somewhere wrong.
                let litter = (0..<64).map { _ in [UInt8](repeating: 0xAB, count: 160) }
                release.signal()
                withExtendedLifetime(litter) {}
                guard finished.wait(timeout: deadline()) == .success else { exit(4) }
            }
        }
    }

    @Test("chains of plain BlockOperations whose links are cancelled and released mid-run are safe (own process)")
    func cancelledBlockLinksReleased() async {
        // A link's dependents are walked, by unretained pointer, while the link finishes. A cancelled link that
        // finished early and was released must not be among them, whatever the links' classes: ConcurrentOperation's
        // own hold on its dependents does not reach plain operations.
        await #expect(processExitsWith: .success) {
            let queuer = Queuer(name: "test.release.blocklinks")
            for _ in 0..<300 {
                let done = DispatchSemaphore(value: 0)
                do {
                    let links = (0..<24).map { _ in BlockOperation {} }
                    queuer.addChainedOperations(links) { done.signal() }
                    for (index, link) in links.enumerated() where !index.isMultiple(of: 3) { link.cancel() }
                }
                guard done.wait(timeout: deadline()) == .success else { exit(2) }
            }
        }
    }

    @Test("an empty chain's completion still runs")
    func emptyChain() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.empty")
            let done = DispatchSemaphore(value: 0)
            queuer.addChainedOperations([]) { done.signal() }
            checks.expect(done.wait(timeout: deadline()) == .success)
        }
    }

    @Test("two failing operations in a chain run 0,0,0,1,1,1 then the completion")
    func retriesInChain() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.retry")
            let log = AtomicBox<[String]>([])
            let done = DispatchSemaphore(value: 0)
            queuer.addChainedOperations([logging("0", log, succeed: false), logging("1", log, succeed: false)]) {
                log.mutate { $0.append("completion") }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(log.value == ["0", "0", "0", "1", "1", "1", "completion"])
        }
    }

    @Test("addCompletionHandler runs after every operation added before it, not only the last")
    func completionHandlerWaitsForAll() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.completion", maxConcurrentOperationCount: 2)
            let release = DispatchSemaphore(value: 0)
            let log = AtomicBox<[String]>([])
            let done = DispatchSemaphore(value: 0)
            queuer.addOperation {
                hold(until: release)
                log.mutate { $0.append("slow") }
            }
            queuer.addOperation { log.mutate { $0.append("quick") } }
            queuer.addCompletionHandler {
                log.mutate { $0.append("completion") }
                done.signal()
            }
            checks.expect(
                done.wait(timeout: .now() + .milliseconds(100)) == .timedOut,
                "the slow operation is still running"
            )
            release.signal()
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(log.value.last == "completion")
            checks.expect(Set(log.value.dropLast()) == ["slow", "quick"])
        }
    }

    @Test("maxConcurrentOperationCount is respected", arguments: [1, 2, 3])
    func concurrencyLimit(limit: Int) async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.limit", maxConcurrentOperationCount: limit)
            let gauge = ConcurrencyGauge()
            for _ in 0..<12 {
                queuer.addOperation {
                    gauge.measure {
                        Thread.sleep(forTimeInterval: 0.005)  // overlap, so that the limit is what stops them
                    }
                }
            }
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(gauge.peak <= limit)
            checks.expect(queuer.maxConcurrentOperationCount == limit)
        }
    }

    @Test("a maxConcurrentOperationCount below 1 traps with a message naming the Queuer and the value")
    func invalidLimitTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Queuer(name: "test.invalid", maxConcurrentOperationCount: 0)
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("Queuer 'test.invalid': maxConcurrentOperationCount must be 1 or more"), "\(stderr)")
        #expect(stderr.contains("got 0"))
    }

    @Test("setting maxConcurrentOperationCount below 1 traps with a message naming the Queuer and the value")
    func invalidLimitSetTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queuer = Queuer(name: "test.invalid.set")
            queuer.maxConcurrentOperationCount = -3
        }
        let stderr = text(result?.standardErrorContent)
        #expect(
            stderr.contains("Queuer 'test.invalid.set': maxConcurrentOperationCount must be 1 or more"),
            "\(stderr)"
        )
        #expect(stderr.contains("got -3"))
    }

    @Test("pause keeps pending operations from starting; resume starts them and resumes ConcurrentOperations")
    func pauseAndResume() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.pause")
            queuer.pause()
            checks.expect(queuer.isExecuting == false)
            let ran = DispatchSemaphore(value: 0)
            let operation = ConcurrentOperation { _ in ran.signal() }
            queuer.addOperation(operation)
            checks.expect(ran.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
            queuer.pause()
            checks.expect(operation.isPaused)
            queuer.resume()
            checks.expect(operation.isPaused == false)
            checks.expect(ran.wait(timeout: deadline()) == .success)
        }
    }

    @Test("cancelAll cancels queued operations and completion handlers")
    func cancelAll() async throws {
        try await offPoolTest { checks in
            let queuer = Queuer(name: "test.cancel")
            queuer.pause()
            let ran = AtomicBox(false)
            queuer.addOperation(ConcurrentOperation { _ in ran.mutate { $0 = true } })
            queuer.addCompletionHandler { ran.mutate { $0 = true } }
            queuer.cancelAll()
            queuer.resume()
            queuer.waitUntilAllOperationsAreFinished()
            checks.expect(ran.value == false)
        }
    }

    @Test("waitUntilAllOperationsAreFinished works synchronously and with await, and waitForAll with await")
    func waits() async {
        let queuer = Queuer(name: "test.wait", maxConcurrentOperationCount: 2)
        let count = AtomicBox(0)
        for _ in 0..<20 { queuer.addOperation { count.mutate { $0 += 1 } } }
        #expect(await completes { await queuer.waitUntilAllOperationsAreFinished() })
        #expect(count.value == 20)
        for _ in 0..<20 { queuer.addOperation { count.mutate { $0 += 1 } } }
        #expect(await completes { await queuer.waitForAll() })
        #expect(count.value == 40)
        for _ in 0..<20 { queuer.addOperation { count.mutate { $0 += 1 } } }
        await offPool { blockUntilFinished(queuer) }
        #expect(count.value == 60)
        // Foundation takes a finished operation off its queue just after it wakes the waiters.
        #expect(await suspendUntil { queuer.operationCount == 0 })
    }
}
