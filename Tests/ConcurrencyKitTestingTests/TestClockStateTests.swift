import TestSupport
import Testing

@testable import ConcurrencyKitTesting

/// The order the clock resumes sleepers in, seen in its state: what tasks running on many threads cannot show.
@Suite("TestClock: the order of wakes", .timeLimit(.minutes(1)))
struct TestClockStateTests {
    @Test("an advance resumes sleepers earliest deadline first, and equal deadlines in the order they went to sleep")
    func resumeOrder() async throws {
        let clock = TestClock()
        // Each goes to sleep only after the one before it is registered: names in the order they slept.
        var sleepers: [String: Task<Void, any Error>] = [:]
        for (count, (name, seconds)) in [("b5", 5), ("a3", 3), ("c5", 5), ("d1", 1), ("e5", 5)].enumerated() {
            sleepers[name] = Task { try await clock.sleep(for: .seconds(seconds)) }
            try await clock.waitForSleepers(count + 1, timeout: patienceLimit)
        }
        let names = self.namesByID(clock)
        let wakeups = clock.state.mutate { $0.advance(to: TestClock.Instant(offset: .seconds(5))) }
        #expect(wakeups.sleepers.map { names[$0.id] } == ["d1", "a3", "b5", "c5", "e5"])
        wakeups.resume()
        for sleeper in sleepers.values { #expect(try await completes { try await sleeper.value }) }
    }

    /// Which sleeper is which: by deadline, and the three 5 s ones by the order they slept in, as their ids grow.
    private func namesByID(_ clock: TestClock) -> [UInt64: String] {
        let registered = clock.state.mutate { $0.sleepers.map { ($0.id, $0.deadline.offset) } }
        var names: [UInt64: String] = [:]
        let fives = registered.filter { $0.1 == .seconds(5) }.map(\.0).sorted()
        for (id, name) in zip(fives, ["b5", "c5", "e5"]) { names[id] = name }
        for (id, offset) in registered where offset != .seconds(5) { names[id] = offset == .seconds(3) ? "a3" : "d1" }
        return names
    }
}
