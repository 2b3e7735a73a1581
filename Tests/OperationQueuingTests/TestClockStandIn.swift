import AtomicPrimitives
import TestSupport

// A stand-in for ConcurrencyKitTesting's `TestClock` until that product lands on main: the part of its API these
// tests use (`now`, `deadlines`, `sleep`, `advance(by:)`, `waitForSleepers(_:)`), with the same meaning. When it
// lands, this file goes and the tests import ConcurrencyKitTesting instead.

/// A clock whose time moves only when a test moves it.
final class TestClock: Clock, Sendable {
    /// An instant: a duration from the clock's origin.
    struct Instant: InstantProtocol, CustomStringConvertible {
        let offset: Duration

        init(offset: Duration = .zero) { self.offset = offset }

        func advanced(by duration: Duration) -> Instant { Instant(offset: self.offset + duration) }

        func duration(to other: Instant) -> Duration { other.offset - self.offset }

        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }

        var description: String { self.offset.description }
    }

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let continuation: UnsafeContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant()
        var sleepers: [Sleeper] = []
        var lastID = 0
    }

    private let state = AtomicBox(State(), name: "TestClock stand-in")

    var now: Instant { self.state.value.now }

    var minimumResolution: Duration { .zero }

    /// The deadlines of the tasks asleep on the clock, earliest first.
    var deadlines: [Instant] { self.state.value.sleepers.map(\.deadline).sorted() }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = self.state.mutate { state in
            state.lastID += 1
            return state.lastID
        }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                enum Registration { case cancelled, due, asleep }
                let registration = self.state.mutate { state -> Registration in
                    if Task.isCancelled { return .cancelled }
                    if deadline <= state.now { return .due }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return .asleep
                }
                switch registration {
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .due: continuation.resume()
                case .asleep: break
                }
            }
        } onCancel: {
            let removed = self.state.mutate { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            removed?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time forward by `duration`, and wakes every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        let due = self.state.mutate { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Suspends until at least `count` tasks sleep on the clock.
    func waitForSleepers(_ count: Int) async throws {
        guard await suspendUntil({ self.state.value.sleepers.count >= count }) else {
            throw StandInError.sleepersMissing(expected: count, deadlines: self.deadlines)
        }
    }

    enum StandInError: Error {
        case sleepersMissing(expected: Int, deadlines: [Instant])
    }
}
