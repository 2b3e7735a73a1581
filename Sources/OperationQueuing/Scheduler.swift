import AtomicPrimitives
import Dispatch

/// A timer that runs a handler at a deadline, once or repeatedly: Queuer's `Scheduler`, without its crashes.
///
/// ```swift
/// import Dispatch
/// import OperationQueuing
///
/// let pings = CountingSemaphore()
/// let heartbeat = Scheduler(deadline: .now() + 1, repeating: .seconds(1)) {
///     print("ping")
///     pings.signal()
/// }
/// pings.wait()
/// pings.wait()
/// heartbeat.cancel()  // it pings until cancelled, or until `heartbeat` is released
/// // Prints "ping"
/// // Prints "ping"
/// ```
///
/// It starts at `deadline` once it has a handler — given to `init`, or set by the first ``setHandler(_:)`` — and
/// repeats every `repeating` (`.never` fires once). Setting a handler again replaces it. Releasing a scheduler is safe
/// in every state: never started, running or cancelled.
public final class Scheduler: @unchecked Sendable {
    /// The underlying timer source.
    ///
    /// Do not resume, suspend or cancel it directly.
    public let timer: any DispatchSourceTimer
    /// When the scheduler first fires, as given to `init`.
    public let deadline: DispatchTime
    /// The interval between fires, as given to `init`; `.never` fires once.
    public let repeating: DispatchTimeInterval
    /// The quality of service of the global queue the handler runs on, as given to `init`.
    public let qualityOfService: DispatchQoS
    // Safety: `isStarted`, `isCancelled` and `handler` are only touched under `lock`.
    private let lock = MutexLock()
    private var isStarted = false
    private var isCancelled = false
    private var handler: (@Sendable () -> Void)?

    /// Creates a scheduler, started at once if `handler` is given.
    ///
    /// - Parameters:
    ///   - deadline: When it first fires.
    ///   - repeating: The interval between fires; `.never` (the default) fires once.
    ///   - qualityOfService: The quality of service of the global queue the handler runs on.
    ///   - handler: What to run; without one, the scheduler starts at the first ``setHandler(_:)``.
    /// - Precondition: `repeating` is `.never` or a positive interval.
    public init(
        deadline: DispatchTime,
        repeating: DispatchTimeInterval = .never,
        qualityOfService: DispatchQoS = .default,
        handler: (@Sendable () -> Void)? = nil
    ) {
        guarantee(
            Self.isValid(repeating),
            "Scheduler: repeating must be .never or a positive interval, got \(repeating)"
        )
        self.deadline = deadline
        self.repeating = repeating
        self.qualityOfService = qualityOfService
        self.timer = DispatchSource.makeTimerSource(queue: .global(qos: qualityOfService.qosClass))
        self.timer.setEventHandler { [weak self] in self?.fire() }
        if let handler { self.setHandler(handler) }
    }

    /// Creates a scheduler that first fires `delay` from now, started at once if `handler` is given:
    /// `init(deadline:repeating:qualityOfService:handler:)` with `Duration`s.
    ///
    /// ```swift
    /// import OperationQueuing
    ///
    /// let heartbeat = Scheduler(after: .seconds(1), repeating: .seconds(1)) { print("ping") }
    /// print(heartbeat.repeating)  // nanoseconds(1000000000)
    /// heartbeat.cancel()
    /// ```
    ///
    /// ``deadline`` and ``repeating`` hold the Dispatch values the durations give. A delay too long to represent in
    /// nanoseconds (about 292 years or more) never fires, a repeat interval that long never repeats.
    /// - Parameters:
    ///   - delay: The time from now to the first fire.
    ///   - repeating: The time between fires; `nil` (the default) fires once.
    ///   - qualityOfService: The quality of service of the global queue the handler runs on.
    ///   - handler: What to run; without one, the scheduler starts at the first ``setHandler(_:)``.
    /// - Precondition: `delay` is 0 or more; `repeating` is `nil` or at least one nanosecond.
    public convenience init(
        after delay: Duration,
        repeating: Duration? = nil,
        qualityOfService: DispatchQoS = .default,
        handler: (@Sendable () -> Void)? = nil
    ) {
        guarantee(delay >= .zero, "Scheduler: delay must be 0 or more, got \(delay)")
        let repeatSpan = repeating.map { Deadline.Span($0) }
        guarantee(
            repeatSpan != Deadline.Span.none,
            "Scheduler: repeating must be nil or at least one nanosecond (Dispatch's unit), got \(repeating.map { "\($0)" } ?? "nil")"
        )
        self.init(
            deadline: Deadline(after: delay).dispatchTime,
            repeating: repeatSpan?.interval ?? .never,
            qualityOfService: qualityOfService,
            handler: handler
        )
    }

    deinit {
        // A never-resumed source must be resumed before it is cancelled and released.
        if !self.isStarted { self.timer.resume() }
        if !self.isCancelled { self.timer.cancel() }
    }

    /// Sets what runs on each fire, replacing the previous handler; the first handler starts the scheduler.
    ///
    /// - Parameter handler: Runs on a global queue.
    public func setHandler(_ handler: @escaping @Sendable () -> Void) {
        self.lock.withLock {
            self.handler = handler
            guard !self.isStarted, !self.isCancelled else { return }
            self.isStarted = true
            self.timer.schedule(deadline: self.deadline, repeating: self.repeating)
            self.timer.resume()
        }
    }

    /// Stops the scheduler for good.
    public func cancel() {
        self.lock.withLock {
            guard !self.isCancelled else { return }
            if !self.isStarted {
                self.isStarted = true
                self.timer.resume()
            }
            self.isCancelled = true
            self.timer.cancel()
        }
    }

    /// Whether `interval` is `.never` or positive: Dispatch traps deep inside on a negative one.
    private static func isValid(_ interval: DispatchTimeInterval) -> Bool {
        switch interval {
        case .seconds(let count), .milliseconds(let count), .microseconds(let count), .nanoseconds(let count):
            count > 0
        case .never:
            true
        @unknown default:
            true
        }
    }

    private func fire() {
        let handler = self.lock.withLock { self.isCancelled ? nil : self.handler }
        handler?()
    }
}
