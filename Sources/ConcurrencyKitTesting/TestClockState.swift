/// What a ``TestClock`` knows, kept under its lock: the time, the sleepers and their deadlines, the wakes still on
/// their way back, and who waits for any of that to change.
///
/// A pure state machine: it never resumes anything itself. Each change returns what must be resumed, and the clock
/// resumes it once the lock is released.
struct TestClockState: Sendable {
    /// One call to ``TestClock/sleep(until:tolerance:)`` that waits for its deadline.
    struct Sleeper: Sendable {
        let id: UInt64
        let deadline: TestClock.Instant
        /// Resumed with `true` when an advance wakes it, or throwing `CancellationError` when its task is cancelled.
        let continuation: UnsafeContinuation<Bool, any Error>
    }

    /// What a change leaves to be resumed once the lock is released.
    struct Wakeups: Sendable {
        /// Sleepers whose deadline has come, earliest first: resume each with `true`.
        var sleepers: [Sleeper] = []
        /// Watchers of the next change: resume each.
        var watchers: [UnsafeContinuation<Void, Never>] = []

        /// Resumes everything, sleepers in deadline order first.
        func resume() {
            for sleeper in self.sleepers { sleeper.continuation.resume(returning: true) }
            for watcher in self.watchers { watcher.resume() }
        }
    }

    private(set) var now: TestClock.Instant
    /// The sleepers, earliest deadline first, and equal deadlines in the order they were registered.
    ///
    /// Every deadline is later than `now`: a sleep until `now` or earlier returns without registering, and an advance
    /// takes out every sleeper due.
    private(set) var sleepers: [Sleeper] = []
    /// Sleepers an advance has resumed whose tasks have not yet come back out of `sleep(until:tolerance:)`.
    private(set) var wakesInFlight = 0
    /// Counts the changes: a watcher that saw one version waits for the next.
    private(set) var version: UInt64 = 0
    private var watchers: [UInt64: UnsafeContinuation<Void, Never>] = [:]
    private var lastID: UInt64 = 0

    init(now: TestClock.Instant) {
        self.now = now
    }

    /// The deadlines of the sleepers, earliest first.
    var deadlines: [TestClock.Instant] { self.sleepers.map(\.deadline) }

    /// A number no other sleeper or watcher of this clock has.
    mutating func makeID() -> UInt64 {
        self.lastID += 1
        return self.lastID
    }

    /// Adds a sleeper after every sleeper whose deadline is not later than its own.
    mutating func insert(_ sleeper: Sleeper) -> Wakeups {
        var low = 0
        var high = self.sleepers.count
        while low < high {
            let middle = (low + high) / 2
            if self.sleepers[middle].deadline <= sleeper.deadline { low = middle + 1 } else { high = middle }
        }
        self.sleepers.insert(sleeper, at: low)
        return self.changed()
    }

    /// Takes out the sleeper with number `id`, if it still waits for its deadline.
    mutating func remove(sleeper id: UInt64) -> (Sleeper, Wakeups)? {
        guard let index = self.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
        let sleeper = self.sleepers.remove(at: index)
        return (sleeper, self.changed())
    }

    /// Moves the time to `target` and takes out every sleeper whose deadline has come.
    mutating func advance(to target: TestClock.Instant) -> Wakeups {
        self.now = target
        let due = self.sleepers.prefix { $0.deadline <= target }
        return self.wake(due.count)
    }

    /// Moves the time to the earliest deadline, and takes out every sleeper due then; `nil` if nobody sleeps.
    mutating func advanceToEarliestDeadline() -> Wakeups? {
        guard let earliest = self.sleepers.first?.deadline else { return nil }
        return self.advance(to: earliest)
    }

    /// Takes out the first `count` sleepers as woken.
    private mutating func wake(_ count: Int) -> Wakeups {
        var wakeups = self.changed()
        wakeups.sleepers = Array(self.sleepers.prefix(count))
        self.sleepers.removeFirst(count)
        self.wakesInFlight += count
        return wakeups
    }

    /// Records that a woken sleeper's task has come back out of its sleep.
    mutating func land() -> Wakeups {
        self.wakesInFlight -= 1
        return self.changed()
    }

    /// Registers a watcher of the next change after `version`; `false` if that change has already happened.
    mutating func watch(_ id: UInt64, since version: UInt64, _ continuation: UnsafeContinuation<Void, Never>) -> Bool {
        guard version == self.version else { return false }
        self.watchers[id] = continuation
        return true
    }

    /// Takes out the watcher with number `id`, if it still waits.
    mutating func unwatch(_ id: UInt64) -> UnsafeContinuation<Void, Never>? {
        self.watchers.removeValue(forKey: id)
    }

    /// Counts a change, and takes out every watcher, since each waits for the next change.
    mutating func changed() -> Wakeups {
        self.version &+= 1
        return self.takeWatchers()
    }

    /// Takes out every watcher without counting a change, so that each looks again at something else: the time.
    mutating func takeWatchers() -> Wakeups {
        defer { self.watchers.removeAll(keepingCapacity: true) }
        return Wakeups(watchers: Array(self.watchers.values))
    }
}
