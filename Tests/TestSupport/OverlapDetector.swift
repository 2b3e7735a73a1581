import Synchronization

/// Detects two sections that run at once, the way a jcstress test does: an `inside` flag taken with an atomic
/// exchange, and an unsynchronized counter that ThreadSanitizer reports if the sections ever overlap.
///
/// The counter is deliberately not atomic: if the code under test fails to order the sections, the lost updates
/// show in ``count`` and ThreadSanitizer sees the data race. Only the flag is atomic, so that the test can name the
/// overlap even without a sanitizer.
public final class OverlapDetector: @unchecked Sendable {
    // Safety: deliberately unsynchronized; the code under test must order every access (that is what is checked).
    private var counter = 0
    private let inside = Atomic<Bool>(false)
    private let overlapCount = Atomic<Int>(0)
    private let ended = Atomic<Int>(0)

    /// Creates a detector with no section run yet.
    public init() {}

    /// Starts a section: marks it inside and bumps the unsynchronized counter.
    public func begin() {
        if self.inside.exchange(true, ordering: .acquiringAndReleasing) {
            self.overlapCount.add(1, ordering: .relaxed)
        }
        self.counter += 1
    }

    /// Ends the section started by ``begin()``, possibly on another thread.
    public func end() {
        self.inside.store(false, ordering: .releasing)
        self.ended.add(1, ordering: .relaxed)
    }

    /// Runs `body` as one section.
    public func section<Result>(_ body: () throws -> Result) rethrows -> Result {
        self.begin()
        defer { self.end() }
        return try body()
    }

    /// Whether a section has begun and not yet ended.
    public var isInside: Bool { self.inside.load(ordering: .acquiring) }

    /// How many sections found another one inside when they started.
    public var overlaps: Int { self.overlapCount.load(ordering: .relaxed) }

    /// How many sections have ended so far, counted atomically: the run's progress, readable while it runs, for
    /// ``waitForProgress(_:stillFor:progress:)``.
    public var progress: Int { self.ended.load(ordering: .relaxed) }

    /// How many sections ran, as counted without synchronization; read it once all sections have ended.
    public var count: Int { self.counter }
}
