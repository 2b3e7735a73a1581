/// A clock's ticks at a fixed interval, as an `AsyncSequence`: a timer that needs no Dispatch.
///
/// Where ``GCDTimer`` is a Dispatch timer source with a handler (and ``GCDTimer/ticks`` its fires as a sequence),
/// `ClockTicks` is only a loop that sleeps on a clock: any `Clock` whose durations are `Duration`, so a test can pass
/// a clock it moves itself, such as `TestClock` from ConcurrencyKitTesting, and see every tick without waiting.
///
/// ```swift
/// import DispatchKit
///
/// var ticks = 0
/// for await _ in ClockTicks(every: .milliseconds(10)) {
///     ticks += 1
///     if ticks == 3 { break }
/// }
/// print(ticks)  // 3
/// ```
///
/// Each loop keeps its own schedule, which starts when the loop does (`makeAsyncIterator()`): its ticks are due
/// `interval`, `2 × interval`, … after that instant, and each element is the instant its tick was due, so ticks do
/// not drift however long the loop's body takes. A loop that falls behind gets no backlog: when it asks for a tick
/// after one or more were due, it gets the latest of them at once, and the schedule goes on from there, as
/// ``GCDTimer/ticks`` keeps only the latest fire. The loop ends when its task is cancelled; nothing else ends it.
public struct ClockTicks<TickClock: Clock<Duration>>: AsyncSequence, Sendable {
    /// The instant a tick was due.
    public typealias Element = TickClock.Instant
    /// A loop over ticks never throws: cancellation ends it.
    public typealias Failure = Never

    private let interval: Duration
    private let tolerance: Duration?
    private let clock: TickClock

    /// Creates the ticks of `clock`, one every `interval`.
    ///
    /// - Parameters:
    ///   - interval: The time between two ticks; more than zero, or the call traps with a message.
    ///   - tolerance: How late the clock may wake the loop, to save energy; `nil` leaves it to the clock.
    ///   - clock: The clock to sleep on.
    public init(every interval: Duration, tolerance: Duration? = nil, clock: TickClock) {
        guarantee(interval > .zero, "ClockTicks: the interval must be more than zero; got \(interval)")
        self.interval = interval
        self.tolerance = tolerance
        self.clock = clock
    }

    /// Starts a schedule from the clock's time now, and returns the iterator of its ticks.
    ///
    /// An interval too long to represent in nanoseconds (about 292 years or more, up to the largest `Duration`, which
    /// no clock's instant may hold) never ticks, as a timed wait that long never ends: the loop waits until its task
    /// is cancelled.
    public func makeAsyncIterator() -> AsyncIterator {
        let now = self.clock.now
        let isEndless = Deadline.Span(self.interval) == .unlimited
        return AsyncIterator(
            due: isEndless ? now : now.advanced(by: self.interval),
            isEndless: isEndless,
            interval: self.interval,
            tolerance: self.tolerance,
            clock: self.clock
        )
    }

    /// Takes the ticks of one schedule, one at a time.
    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        /// When the next tick is due; `nil` once the loop has ended.
        private var due: TickClock.Instant?
        /// Whether the interval is too long for a tick ever to come.
        private let isEndless: Bool
        private let interval: Duration
        private let tolerance: Duration?
        private let clock: TickClock

        init(due: TickClock.Instant, isEndless: Bool, interval: Duration, tolerance: Duration?, clock: TickClock) {
            self.due = due
            self.isEndless = isEndless
            self.interval = interval
            self.tolerance = tolerance
            self.clock = clock
        }

        /// Sleeps until the next tick is due.
        ///
        /// - Returns: The instant the tick was due, the latest one if several were; `nil` once the task is
        ///   cancelled.
        public mutating func next() async -> TickClock.Instant? {
            await self.next(isolation: nil)
        }

        /// Sleeps until the next tick is due, and returns to the caller's isolation.
        ///
        /// - Parameter actor: The caller's actor.
        /// - Returns: The instant the tick was due, the latest one if several were; `nil` once the task is
        ///   cancelled.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> TickClock.Instant? {
            guard let due = self.due else { return nil }
            guard !self.isEndless else {
                await Self.waitForCancellation()
                self.due = nil
                return nil
            }
            do {
                try await self.clock.sleep(until: due, tolerance: self.tolerance)
            } catch {
                self.due = nil
                return nil
            }
            // The ticks that fell due while the loop was away are skipped but the latest.
            let late = due.duration(to: self.clock.now)
            let skipped = late < self.interval ? 0 : late.attoseconds / self.interval.attoseconds
            let tick = due.advanced(by: self.interval * skipped)
            self.due = tick.advanced(by: self.interval)
            return tick
        }

        /// Suspends until the task is cancelled: the wait of a loop whose next tick never comes.
        private static func waitForCancellation() async {
            let waiter = AtomicBox<CheckedContinuation<Void, Never>?>(nil)
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    waiter.mutate { $0 = continuation }
                    if Task.isCancelled { waiter.mutate { $0.take() }?.resume() }
                }
            } onCancel: {
                waiter.mutate { $0.take() }?.resume()
            }
        }
    }
}

extension ClockTicks where TickClock == ContinuousClock {
    /// Creates the ticks of the continuous clock, one every `interval`.
    ///
    /// - Parameters:
    ///   - interval: The time between two ticks; more than zero, or the call traps with a message.
    ///   - tolerance: How late the clock may wake the loop, to save energy; `nil` leaves it to the clock.
    public init(every interval: Duration, tolerance: Duration? = nil) {
        self.init(every: interval, tolerance: tolerance, clock: ContinuousClock())
    }
}
