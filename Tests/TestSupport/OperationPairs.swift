import AtomicPrimitives
import Dispatch
import Foundation
import Synchronization

/// One public operation of a type, as ``OperationPairs`` calls it on an instance.
///
/// An operation must end on its own whatever the other thread does meanwhile: a wait has a timeout, or a partner
/// that always comes (a `wait` on a semaphore after the other side's `signal` could wait for ever, so use a timed
/// wait). An `async` operation runs in a task of its own, which the calling thread waits for.
public struct PairOperation<Subject: Sendable>: Sendable {
    enum Body: Sendable {
        case sync(@Sendable (Subject) -> Void)
        case async(@Sendable (Subject) async -> Void)
        case release
    }

    /// What reports and failures call the operation.
    public let name: String
    let body: Body

    /// An operation that runs on the calling thread.
    public static func sync(_ name: String, _ body: @escaping @Sendable (Subject) -> Void) -> PairOperation {
        PairOperation(name: name, body: .sync(body))
    }

    /// An operation that runs in a task of its own, which the calling thread waits for.
    public static func async(_ name: String, _ body: @escaping @Sendable (Subject) async -> Void) -> PairOperation {
        PairOperation(name: name, body: .async(body))
    }

    /// Drops the test's reference to the instance: the last reference then goes with whatever the other thread is
    /// doing with it, in any state.
    public static var release: PairOperation {
        PairOperation(name: "release", body: .release)
    }
}

/// A stateful type's operations, for ``OperationPairs/run(_:rounds:seconds:)``.
public struct PairTable<Subject: Sendable>: Sendable {
    /// What failures call the type.
    public let typeName: String
    let make: @Sendable () -> Subject
    let operations: [PairOperation<Subject>]
    let tearDown: @Sendable (Subject) -> Void

    /// Creates a table.
    ///
    /// - Parameters:
    ///   - typeName: What failures call the type.
    ///   - make: A fresh instance, for each round.
    ///   - operations: Every public operation that changes or reads the instance's state; ``PairOperation/release``
    ///     is added.
    ///   - tearDown: Ends what a round left going (a paused queue, a running timer), if the instance was not
    ///     released; it runs on the test's thread once both operations have returned.
    public init(
        _ typeName: String,
        make: @escaping @Sendable () -> Subject,
        operations: [PairOperation<Subject>],
        tearDown: @escaping @Sendable (Subject) -> Void = { _ in }
    ) {
        self.typeName = typeName
        self.make = make
        self.operations = operations + [.release]
        self.tearDown = tearDown
    }
}

/// Calls every ordered pair of a type's public operations on one instance from two threads, started together, so
/// that every internal lock order the pair can take is taken under the lock-order checker.
///
/// The checker reports only orders that some run takes; a pair of calls that no test makes against each other on
/// two threads hides whatever inversion it would show. The checker knows locks by instance, and each round makes a
/// fresh instance: both calls of a pair, its `make` and its `tearDown` take their orders on the same locks, so an
/// inversion between any two operations shows in their round, whether or not the calls happen to overlap; overlapping
/// calls add the orders only a race takes (a release during a call, a handler set while the timer fires). Every report made on the two threads is captured and returned
/// as a failure naming the pair (in any mode, so a plain `swift test` fails too); a report made on a thread of the
/// library (a queue's block, a timer's handler) warns or traps as the mode says, and trap mode (the gate's) stops the
/// run. A pair that does not return within its time limit is a failure too: a deadlock, or an operation that waits for
/// something the other one may never do.
public enum OperationPairs {
    /// Runs each ordered pair of `table`'s operations `rounds` times, each time on a fresh instance.
    ///
    /// - Parameters:
    ///   - table: The type's operations.
    ///   - rounds: How many times each ordered pair runs.
    ///   - seconds: How long one pair may take: ``patienceSeconds`` unless told, since a pair that is only slow (a task
    ///     that waits for a thread of a busy cooperative pool) must not fail.
    /// - Returns: The failures, each naming the type and the pair; empty if none.
    public static func run<Subject>(
        _ table: PairTable<Subject>,
        rounds: Int = 2,
        seconds: Int = patienceSeconds
    ) -> [String] {
        var failures: [String] = []
        // The threads that run this table's operations now: their reports belong to it, not to a table that another
        // test runs at the same time. Outside the lock-order graph: the filter reads it while a report is made.
        let workers = AtomicBox<Set<UInt>>([], unobserved: ())
        let ours: @Sendable (DiagnosticReport) -> Bool = { _ in workers.value.contains(currentThreadID()) }
        for first in table.operations {
            for second in table.operations {
                let pair = "\(table.typeName): \(first.name) against \(second.name)"
                for _ in 0..<rounds {
                    let (stuck, reports) = DiagnosticReports.capture(where: ours) {
                        Self.runPair(table, first, second, workers: workers, seconds: seconds)
                    }
                    failures += reports.map { "\(pair): lock-order report:\n\($0.message)" }
                    // The threads of a pair that did not return may still hold what the next pair needs.
                    if let stuck { return failures + ["\(pair): \(stuck)"] }
                }
            }
        }
        return failures
    }

    /// One round: a fresh instance, `first` on one thread and `second` on another, released together.
    private static func runPair<Subject>(
        _ table: PairTable<Subject>,
        _ first: PairOperation<Subject>,
        _ second: PairOperation<Subject>,
        workers: AtomicBox<Set<UInt>>,
        seconds: Int
    ) -> String? {
        let slot = AtomicBox<Subject?>(table.make(), name: "OperationPairs.slot")
        let arrived = Atomic<Int>(0)
        let stuck = AtomicBox<String?>(nil, name: "OperationPairs.stuck")
        let returned = runOnThreads(2, seconds: seconds) { index in
            let thread = currentThreadID()
            workers.mutate { _ = $0.insert(thread) }
            defer { workers.mutate { _ = $0.remove(thread) } }
            // Released by semaphores, then lined up here, so that the two calls really overlap. It yields while it
            // waits: a thread late to start on a loaded machine must not find the core taken by its partner's spin.
            arrived.add(1, ordering: .acquiringAndReleasing)
            let limit = deadline(seconds)
            while arrived.load(ordering: .acquiring) < 2 && DispatchTime.now() < limit { sched_yield() }
            let operation = index == 0 ? first : second
            if let failure = Self.perform(operation, on: slot, seconds: seconds) {
                stuck.mutate { $0 = failure }
            }
        }
        if !returned { return "did not return within \(seconds) s" }
        if let failure = stuck.value { return failure }
        if let kept = slot.mutate({ $0.take() }) { table.tearDown(kept) }
        return nil
    }

    private static func perform<Subject>(
        _ operation: PairOperation<Subject>,
        on slot: AtomicBox<Subject?>,
        seconds: Int
    ) -> String? {
        switch operation.body {
        case .release:
            // Taken out under the slot's lock, released after it.
            _ = slot.mutate { $0.take() }
            return nil
        case .sync(let body):
            guard let subject = slot.value else { return nil }
            body(subject)
            return nil
        case .async(let body):
            guard let subject = slot.value else { return nil }
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                await body(subject)
                done.signal()
            }
            return done.wait(timeout: deadline(seconds)) == .success
                ? nil : "\(operation.name)'s task did not return within \(seconds) s"
        }
    }
}
