import AtomicPrimitives
import Dispatch
import Foundation
import OperationQueuing
import Synchronization
import TestSupport
import Testing

/// Queuer: chains run in array order whatever is cancelled, an operation that never ran is not successful, and a
/// cancelled `run` gives up its place at once.
///
/// Chains of random length, with links cancelled before they are added or from another thread at a random moment,
/// run on queues of random width with a cancelled group beside them; every link checks, as it starts, that every
/// earlier link of its chain has finished, and the completion that every link has. `run` calls wait on a paused or
/// busy queue and some are cancelled at random moments; each cancelled one must return before the queue moves.
@Suite("Contract properties: queuer chains and run", .serialized, .timeLimit(propertyTimeLimit))
struct QueuerPropertyTests {
    /// What the links of one chain saw.
    final class Chain: Sendable {
        let links: [ConcurrentOperation]
        let started: AtomicBox<[Bool]>
        let overtaken = AtomicBox<[String]>([])
        let completed = Atomic<Bool>(false)

        init(links: [ConcurrentOperation]) {
            self.links = links
            self.started = AtomicBox([Bool](repeating: false, count: links.count))
        }

        /// Called by link `index` as it starts: every earlier link must have finished.
        func linkStarts(_ index: Int) {
            self.started.mutate { $0[index] = true }
            for earlier in 0..<index where !self.links[earlier].isFinished {
                self.overtaken.mutate { $0.append("link \(index) started before link \(earlier) finished") }
            }
        }

        /// Called by the chain's completion: every link must have finished.
        func completes() {
            for (index, link) in self.links.enumerated() where !link.isFinished {
                self.overtaken.mutate { $0.append("the completion ran before link \(index) finished") }
            }
            self.completed.store(true, ordering: .sequentiallyConsistent)
        }
    }

    /// How a link's block finds its chain: weakly, since the chain holds the link, which holds the block.
    final class ChainBox: Sendable {
        private let reference = AtomicBox<WeakReference<Chain>?>(nil)

        func set(_ chain: Chain) { self.reference.mutate { $0 = WeakReference(chain) } }

        var chain: Chain? { self.reference.value?.object }
    }

    static func work(_ amount: Int) {
        var sink = 0
        for index in 0..<amount { sink &+= index }
        withExtendedLifetime(sink) {}
    }

    @Test("chains run in array order whatever is cancelled, and an operation that never ran is not successful")
    func chainOrderUnderCancellation() async {
        var random = PropertyRun.random(61)
        for round in 0..<PropertyRun.rounds(20) {
            let width = random.chance(50) ? Int.random(in: 1...4, using: &random) : 8
            let queuer = Queuer(name: "props.chains.\(round)", maxConcurrentOperationCount: width)
            var chains: [Chain] = []
            var cancelLater: [(ConcurrentOperation, Int)] = []
            for chainIndex in 0..<3 {
                let box = ChainBox()
                let length = Int.random(in: 2...6, using: &random)
                let links = (0..<length).map { index in
                    let amount = Int.random(in: 0..<20_000, using: &random)
                    return ConcurrentOperation(name: "chain \(chainIndex) link \(index)") { _ in
                        box.chain?.linkStarts(index)
                        Self.work(amount)
                    }
                }
                let chain = Chain(links: links)
                box.set(chain)
                chains.append(chain)
                for link in links {
                    if random.chance(20) {
                        link.cancel()
                    } else if random.chance(20) {
                        cancelLater.append((link, Int.random(in: 0..<400, using: &random)))
                    }
                }
                queuer.addChainedOperations(links) { [weak chain] in chain?.completes() }
            }
            // A group cancelled before it starts: its operations never run.
            let members = (0..<Int.random(in: 1...3, using: &random)).map { index in
                ConcurrentOperation(name: "group member \(index)") { _ in }
            }
            let group = GroupOperation(members)
            group.cancel()
            queuer.addOperation(group)
            let cancels = cancelLater
            onNewThread {
                for (link, pause) in cancels {
                    usleep(UInt32(pause))
                    link.cancel()
                }
            }
            let ended = await suspendUntil {
                group.isFinished
                    && chains.allSatisfy { chain in
                        chain.completed.load(ordering: .sequentiallyConsistent) && chain.links.allSatisfy(\.isFinished)
                    }
            }
            let endRule = PropertyRun.failure("every chain and its completion finish", round: round)
            #expect(ended, "\(endRule)")
            for (index, chain) in chains.enumerated() {
                let overtaken = chain.overtaken.value
                let orderRule = PropertyRun.failure("a chain runs in array order, cancelled links too", round: round)
                #expect(overtaken.isEmpty, "\(orderRule): chain \(index): \(overtaken)")
                let started = chain.started.value
                for (link, ran) in zip(chain.links, started) where !ran {
                    let successRule = PropertyRun.failure("an operation that never ran is not successful", round: round)
                    #expect(!link.success, "\(successRule): \(link.name ?? "?") (cancelled \(link.isCancelled))")
                }
            }
            let groupRule = PropertyRun.failure("a group cancelled before it ran has not succeeded", round: round)
            #expect(!group.allOperationsSucceeded, "\(groupRule)")
            if !ended { return }
        }
    }

    @Test("a cancelled Queuer.run throws CancellationError while the queue is paused or busy, and never runs its body")
    func runCancellationIsPrompt() async {
        var random = PropertyRun.random(62)
        for round in 0..<PropertyRun.rounds(20) {
            let queuer = Queuer(name: "props.run.\(round)", maxConcurrentOperationCount: 1)
            let paused = random.chance(50)
            let unblock = DispatchSemaphore(value: 0)
            if paused {
                queuer.pause()
            } else {
                // The one slot is busy until the round unblocks it.
                queuer.addOperation(
                    ConcurrentOperation(name: "busy") { _ in hold(until: unblock) }
                )
            }
            let bodies = AtomicBox(0)
            let calls = Int.random(in: 2...5, using: &random)
            let tasks = (0..<calls).map { index in
                Task { () -> String in
                    do {
                        _ = try await queuer.run {
                            bodies.mutate { $0 += 1 }
                            return index
                        }
                        return "ran"
                    } catch is CancellationError {
                        return "cancelled"
                    } catch {
                        return "threw \(error)"
                    }
                }
            }
            var cancelled: [Int] = []
            for (index, task) in tasks.enumerated() where random.chance(50) {
                try? await Task.sleep(for: .microseconds(Int.random(in: 0..<300, using: &random)))
                task.cancel()
                cancelled.append(index)
            }
            // The queue has not moved yet: every cancelled call must come back now, not when the queue reaches it.
            let returned = AtomicBox(0)
            let waiters = cancelled.map { index in
                Task {
                    let outcome = await tasks[index].value
                    returned.mutate { $0 += 1 }
                    return outcome
                }
            }
            // The queue does not move until the round unblocks it: a call that waited for it would never come back.
            let prompt = await suspendUntil { returned.value == cancelled.count }
            let promptRule = PropertyRun.failure("a cancelled run returns before the queue moves", round: round)
            let queueState = paused ? "paused" : "busy"
            #expect(prompt, "\(promptRule): \(cancelled.count - returned.value) stuck, queue \(queueState)")
            if paused { queuer.resume() } else { unblock.signal() }
            var outcomes: [String] = []
            for task in tasks { outcomes.append(await task.value) }
            for waiter in waiters { _ = await waiter.value }
            for index in cancelled {
                let rule = PropertyRun.failure("a run cancelled before its turn throws CancellationError", round: round)
                #expect(
                    outcomes[index] == "cancelled",
                    "\(rule): call \(index) \(outcomes[index]), queue \(queueState)"
                )
            }
            let ran = outcomes.filter { $0 == "ran" }.count
            let bodyRule = PropertyRun.failure("a cancelled run never runs its body", round: round)
            #expect(bodies.value == ran, "\(bodyRule): \(bodies.value) bodies, \(ran) ran")
            if !prompt { return }
        }
    }
}
