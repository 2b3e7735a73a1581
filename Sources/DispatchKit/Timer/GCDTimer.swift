import AtomicPrimitives
import Dispatch

/// A timer on a dispatch queue that fires once or repeatedly: Eki's `Timer`, with its bugs fixed.
///
/// Named `GCDTimer` so that it never collides with Foundation's `Timer`.
///
/// ```swift
/// import DispatchKit
///
/// let ticker = GCDTimer.scheduleWithInterval(1, onQueue: .main, repeating: 1) { print("tick") }
/// ticker.pause()
/// ticker.start()  // resumes
/// ticker.stop()   // final
/// print(ticker.isRunning)  // false
/// ```
///
/// A new timer is paused: nothing fires until ``start()``, or until a loop over ``ticks`` starts it. The first fire
/// comes `interval` seconds after the start (or at the deadline); with a ``repeatInterval`` it then fires every
/// `repeatInterval` seconds, without one it fires once and is then finished. ``start()`` and ``pause()`` are
/// idempotent; ``stop()`` is final. Releasing a timer is safe in every state — a suspended `DispatchSourceTimer` is
/// resumed before it is cancelled.
public final class GCDTimer: @unchecked Sendable {
    private enum State {
        case new, running, paused, finished
    }

    private enum FirstFire {
        /// After this interval from `start()`; `nil`: never.
        case after(DispatchTimeInterval?)
        case at(DispatchWallTime)
    }

    // Safety: `source` is only driven while `lock` is held; every var below is read and written under `lock`.
    private let lock = MutexLock()
    private let source: any DispatchSourceTimer
    private let firstFire: FirstFire
    private var state = State.new
    private var handlerBlock: (@Sendable () -> Void)?
    /// The start and cancel handlers, shared with the source's registration and cancel handlers, which must not keep
    /// the timer alive.
    private let handlers = TimerLifecycleHandlers()
    private var repeatIntervalStorage: TimeSpan?
    private var toleranceStorage = TimeSpan.seconds(0)
    /// Whether the run that `start()` began repeats: decided when it starts, whatever is set later.
    private var repeats = false
    /// The iterations of ``ticks`` in progress, by registration number.
    private var tickListeners: [Int: AsyncStream<DispatchTime>.Continuation] = [:]
    private var lastTickListener = 0
    private var wasStopped = false

    /// The queue the handler runs on.
    public let queue: GCDQueue

    /// Creates a paused timer that first fires `interval` seconds after ``start()``.
    ///
    /// An interval too long to represent — about 292 years or more, `infinity` included — means the timer never
    /// fires.
    /// - Parameters:
    ///   - queue: Where the handler runs; the background queue unless you say otherwise.
    ///   - interval: Seconds from ``start()`` to the first fire.
    /// - Precondition: `interval` is a number, 0 or more (not NaN).
    public convenience init(queue: GCDQueue = .background, interval: Double) {
        self.init(queue: queue, firstFire: .after(TimeSpan.seconds(interval).interval("GCDTimer: interval")))
    }

    /// Creates a paused timer that first fires `interval` after ``start()``: `init(queue:interval:)` with a
    /// `Duration`.
    ///
    /// An interval too long to represent in nanoseconds — about 292 years or more — means the timer never fires.
    /// - Parameters:
    ///   - queue: Where the handler runs; the background queue unless you say otherwise.
    ///   - interval: The time from ``start()`` to the first fire.
    /// - Precondition: `interval` is 0 or more.
    public convenience init(queue: GCDQueue = .background, interval: Duration) {
        self.init(queue: queue, firstFire: .after(TimeSpan.duration(interval).interval("GCDTimer: interval")))
    }

    /// Creates a paused timer that first fires at `deadline` once started.
    ///
    /// - Parameters:
    ///   - queue: Where the handler runs; the background queue unless you say otherwise.
    ///   - deadline: The wall-clock time of the first fire.
    public convenience init(queue: GCDQueue = .background, deadline: DispatchWallTime) {
        self.init(queue: queue, firstFire: .at(deadline))
    }

    private init(queue: GCDQueue, firstFire: FirstFire) {
        self.queue = queue
        self.firstFire = firstFire
        self.source = DispatchSource.makeTimerSource(queue: queue.dispatchQueue)
        self.source.setEventHandler { [weak self] in self?.fire() }
        self.handlers.install(on: self.source)
    }

    /// Creates, and starts, a timer that fires once after `seconds`, or, with `repeating`, then every `repeating`
    /// seconds.
    ///
    /// Equivalent to Eki's: init, handler, start.
    /// - Parameters:
    ///   - seconds: The interval before the first fire.
    ///   - onQueue: Where the handler runs; the background queue unless you say otherwise.
    ///   - repeating: The interval between later fires; `nil` (the default) fires once.
    ///   - handler: What to do on each fire.
    /// - Returns: The running timer. Keep it: releasing it stops it.
    /// - Precondition: `seconds` is a number, 0 or more; `repeating` is `nil` or at least one nanosecond (1e-9).
    public static func scheduleWithInterval(
        _ seconds: Double,
        onQueue: GCDQueue = .background,
        repeating: Double? = nil,
        handler: @escaping @Sendable () -> Void
    ) -> GCDTimer {
        let timer = GCDTimer(queue: onQueue, interval: seconds)
        timer.repeatInterval = repeating
        return timer.started(with: handler)
    }

    /// Creates, and starts, a timer that fires once after `interval`, or, with `repeating`, then every `repeating`:
    /// `scheduleWithInterval(_:onQueue:repeating:handler:)` with `Duration`s.
    ///
    /// ```swift
    /// import DispatchKit
    ///
    /// let ticker = GCDTimer.scheduleWithInterval(.milliseconds(500), repeating: .seconds(1)) { print("tick") }
    /// ticker.stop()
    /// print(ticker.repeatDuration == .seconds(1))  // true
    /// ```
    ///
    /// - Parameters:
    ///   - interval: The time before the first fire.
    ///   - onQueue: Where the handler runs; the background queue unless you say otherwise.
    ///   - repeating: The time between later fires; `nil` (the default) fires once.
    ///   - handler: What to do on each fire.
    /// - Returns: The running timer. Keep it: releasing it stops it.
    /// - Precondition: `interval` is 0 or more; `repeating` is `nil` or at least one nanosecond.
    public static func scheduleWithInterval(
        _ interval: Duration,
        onQueue: GCDQueue = .background,
        repeating: Duration? = nil,
        handler: @escaping @Sendable () -> Void
    ) -> GCDTimer {
        let timer = GCDTimer(queue: onQueue, interval: interval)
        timer.repeatDuration = repeating
        return timer.started(with: handler)
    }

    /// Sets `handler` and starts the timer: the last steps of the `schedule…` factories.
    private func started(with handler: @escaping @Sendable () -> Void) -> GCDTimer {
        self.handler(handler)
        self.start()
        return self
    }

    /// Creates, and starts, a timer that fires once at `date`, or, with `repeating`, then every `repeating` seconds.
    ///
    /// Eki's `scheduleWithDate`, taking a wall-clock time: a date in the past fires at once.
    /// - Parameters:
    ///   - date: The wall-clock time of the first fire, for instance `.now() + 5`.
    ///   - onQueue: Where the handler runs; the background queue unless you say otherwise.
    ///   - repeating: The interval between later fires; `nil` (the default) fires once.
    ///   - handler: What to do on each fire.
    /// - Returns: The running timer. Keep it: releasing it stops it.
    /// - Precondition: `repeating` is `nil` or at least one nanosecond (1e-9).
    public static func scheduleWithDate(
        _ date: DispatchWallTime,
        onQueue: GCDQueue = .background,
        repeating: Double? = nil,
        handler: @escaping @Sendable () -> Void
    ) -> GCDTimer {
        let timer = GCDTimer(queue: onQueue, deadline: date)
        timer.repeatInterval = repeating
        return timer.started(with: handler)
    }

    /// Creates, and starts, a timer that fires at `date` and then every `repeating`:
    /// `scheduleWithDate(_:onQueue:repeating:handler:)` with a `Duration`.
    ///
    /// - Parameters:
    ///   - date: The wall-clock time of the first fire, for instance `.now() + 5`.
    ///   - onQueue: Where the handler runs; the background queue unless you say otherwise.
    ///   - repeating: The time between later fires.
    ///   - handler: What to do on each fire.
    /// - Returns: The running timer. Keep it: releasing it stops it.
    /// - Precondition: `repeating` is at least one nanosecond.
    public static func scheduleWithDate(
        _ date: DispatchWallTime,
        onQueue: GCDQueue = .background,
        repeating: Duration,
        handler: @escaping @Sendable () -> Void
    ) -> GCDTimer {
        let timer = GCDTimer(queue: onQueue, deadline: date)
        timer.repeatDuration = repeating
        return timer.started(with: handler)
    }

    deinit {
        // A suspended or never-resumed source must be resumed before it is cancelled and released; nobody else can
        // reach the timer now, so the lock is not needed.
        for listener in self.finish() { listener.finish() }
    }

    /// Seconds between fires after the first; `nil` (the default) fires once.
    ///
    /// Read when a new timer starts: whether the timer repeats, and how often, is decided then; setting it later
    /// changes nothing for this timer. An interval too long to represent (about 292 years or more, `infinity`
    /// included) repeats never, though the timer stays running. ``repeatDuration`` is the same setting as a
    /// `Duration`: a value set there reads here as the nearest number of seconds.
    /// - Precondition: A new value is `nil` or at least one nanosecond, 1e-9 (not NaN: less is 0 to Dispatch, which
    ///   would fire without pause).
    public var repeatInterval: Double? {
        get { self.lock.withLock { self.repeatIntervalStorage?.inSeconds } }
        set { self.setRepeat(newValue.map { .seconds($0) }, "GCDTimer: repeatInterval") }
    }

    /// The time between fires after the first, as a `Duration`; `nil` (the default) fires once.
    ///
    /// The same setting as ``repeatInterval``, read when a new timer starts. A value set there in seconds reads here
    /// as the nearest duration (the longest one for `infinity`). A duration too long to represent in nanoseconds
    /// (about 292 years or more) repeats never, though the timer stays running.
    /// - Precondition: A new value is `nil` or at least one nanosecond, as for ``repeatInterval``: what is finer than a
    ///   nanosecond is dropped, and less is 0 to Dispatch.
    public var repeatDuration: Duration? {
        get { self.lock.withLock { self.repeatIntervalStorage?.asDuration } }
        set { self.setRepeat(newValue.map { .duration($0) }, "GCDTimer: repeatDuration") }
    }

    private func setRepeat(_ span: TimeSpan?, _ name: String) {
        span?.checkRepeat(name)
        self.lock.withLock { self.repeatIntervalStorage = span }
    }

    /// How late, in seconds, each fire may come: the source's leeway.
    ///
    /// Read when a new timer starts. A tolerance too long to represent (`infinity` included) is the longest
    /// leeway Dispatch takes. ``toleranceDuration`` is the same setting as a `Duration`.
    /// - Precondition: A new value is a number, 0 or more (not NaN).
    public var tolerance: Double {
        get { self.lock.withLock { self.toleranceStorage.inSeconds } }
        set { self.setTolerance(.seconds(newValue), "GCDTimer: tolerance") }
    }

    /// How late each fire may come, as a `Duration`: the same setting as ``tolerance``.
    ///
    /// Read when a new timer starts. A tolerance too long to represent in nanoseconds is the longest leeway Dispatch
    /// takes.
    /// - Precondition: A new value is 0 or more.
    public var toleranceDuration: Duration {
        get { self.lock.withLock { self.toleranceStorage.asDuration } }
        set { self.setTolerance(.duration(newValue), "GCDTimer: toleranceDuration") }
    }

    private func setTolerance(_ span: TimeSpan, _ name: String) {
        _ = span.interval(name)
        self.lock.withLock { self.toleranceStorage = span }
    }

    /// Whether the timer is started and not paused, stopped or finished.
    public var isRunning: Bool {
        self.lock.withLock { self.state == .running }
    }

    /// Sets what runs on each fire, replacing the previous handler.
    ///
    /// - Parameter block: Runs on the timer's queue.
    public func handler(_ block: @escaping @Sendable () -> Void) {
        self.lock.withLock { self.handlerBlock = block }
    }

    /// Sets what runs, on the timer's queue, when a new timer first starts: before its first fire.
    ///
    /// Set it before ``start()``; afterwards it does not run.
    /// - Parameter block: Runs once, on the timer's queue.
    public func startHandler(_ block: @escaping @Sendable () -> Void) {
        self.handlers.start = block
    }

    /// Sets what runs, on the timer's queue, once the timer has ended: after ``stop()``, after a one-shot's fire, or
    /// when the timer is released; no fire comes after it.
    ///
    /// - Parameter block: Runs once, on the timer's queue. A timer released before it ever started runs it too.
    public func cancelHandler(_ block: @escaping @Sendable () -> Void) {
        self.handlers.cancel = block
    }

    /// Starts a new timer, or resumes a paused one; does nothing to a running, stopped or finished timer.
    public func start() {
        chaosPoint(.timerState)
        self.lock.withLock {
            switch self.state {
            case .new:
                self.startNew()
            case .paused:
                self.source.resume()
                self.state = .running
            case .running, .finished:
                break
            }
        }
    }

    /// Pauses a running timer.
    ///
    /// ``start()`` resumes it. Does nothing in any other state.
    public func pause() {
        chaosPoint(.timerState)
        self.lock.withLock {
            guard self.state == .running else { return }
            self.source.suspend()
            self.state = .paused
        }
    }

    /// Stops the timer for good; iterations of ``ticks`` end, without the fires they have not taken yet.
    public func stop() {
        chaosPoint(.timerState)
        let listeners = self.lock.withLock {
            self.wasStopped = true
            return self.finish()
        }
        for listener in listeners { listener.finish() }
    }

    /// Whether ``stop()`` was called.
    var isStopped: Bool {
        self.lock.withLock { self.wasStopped }
    }

    /// The times the timer fires, as an `AsyncSequence` that ends when the timer stops or finishes.
    ///
    /// ```swift
    /// import DispatchKit
    ///
    /// let timer = GCDTimer(interval: 0.01)
    /// timer.repeatInterval = 0.01
    /// var fires = 0
    /// for await _ in timer.ticks {  // starts the new timer
    ///     fires += 1
    ///     if fires == 3 { timer.stop() }  // ends the loop
    /// }
    /// print(fires)  // 3
    /// ```
    ///
    /// Each iteration receives the fires from its start on, besides the ``handler(_:)``, which still runs. A loop
    /// slower than the timer gets the latest fire time only, not a backlog. The loop ends after a one-shot timer's
    /// fire, and at ``stop()``: from then on it gets no fire, not even one that came before but was not taken yet.
    /// Leaving the loop, or cancelling its task, ends the iteration.
    ///
    /// An iteration keeps its timer alive, and lets it go when it ends: a loop over the ticks of a timer that nobody
    /// else keeps (`for await _ in GCDTimer.scheduleWithInterval(…).ticks`) runs until it leaves, its task is
    /// cancelled, or the timer finishes. So end a repeating timer's loop with ``stop()``, `break` or cancellation.
    ///
    /// An iteration of a new timer, one that was never started, starts it, once the iteration is registered: so the
    /// loop receives the first fire, and a loop never waits for a timer nobody will start. Set ``repeatInterval``,
    /// ``tolerance`` and the handlers before. A paused timer stays paused until ``start()``; the loop of a stopped or
    /// finished timer ends at once.
    public var ticks: GCDTimerTicks {
        GCDTimerTicks(timer: self)
    }

    /// Starts delivering fires to `listener`, and then starts the timer if it is new; or finishes the listener at once
    /// if the timer has finished.
    ///
    /// - Returns: The registration number, for ``removeTickListener(_:)``; `nil` if the timer has finished.
    func addTickListener(_ listener: AsyncStream<DispatchTime>.Continuation) -> Int? {
        chaosPoint(.timerState)
        let number = self.lock.withLock { () -> Int? in
            guard self.state != .finished else { return nil }
            self.lastTickListener += 1
            self.tickListeners[self.lastTickListener] = listener
            if self.state == .new { self.startNew() }
            return self.lastTickListener
        }
        if number == nil { listener.finish() }
        return number
    }

    /// Stops delivering fires to the listener registered as `number`.
    func removeTickListener(_ number: Int) {
        self.lock.withLock { self.tickListeners[number] = nil }
    }

    /// Starts a new timer; call with the lock held.
    private func startNew() {
        self.schedule()
        self.source.resume()
        self.state = .running
    }

    /// Schedules the source, and decides whether this run repeats; call with the lock held.
    private func schedule() {
        self.repeats = self.repeatIntervalStorage != nil
        let repeating: DispatchTimeInterval =
            self.repeatIntervalStorage.flatMap { $0.interval("GCDTimer: repeatInterval") } ?? .never
        let leeway = self.toleranceStorage.interval("GCDTimer: tolerance") ?? .nanoseconds(Int.max)
        switch self.firstFire {
        case .after(let interval):
            let deadline = interval.map { DispatchTime.now() + $0 } ?? .distantFuture
            self.source.schedule(deadline: deadline, repeating: repeating, leeway: leeway)
        case .at(let deadline):
            self.source.schedule(wallDeadline: deadline, repeating: repeating, leeway: leeway)
        }
    }

    /// Cancels the source, resuming it first if it is suspended; call with the lock held (or from `deinit`).
    ///
    /// - Returns: The ``ticks`` listeners, taken out: finish them once the lock is released.
    private func finish() -> [AsyncStream<DispatchTime>.Continuation] {
        switch self.state {
        case .new:
            self.handlers.start = nil  // resumed only to be cancelled: it never started
            self.source.resume()
            self.source.cancel()
        case .paused:
            self.source.resume()
            self.source.cancel()
        case .running:
            self.source.cancel()
        case .finished:
            return []
        }
        self.state = .finished
        defer { self.tickListeners = [:] }
        return Array(self.tickListeners.values)
    }

    private func fire() {
        let (handler, listeners, ended) = self.lock.withLock {
            () -> (
                (@Sendable () -> Void)?, [AsyncStream<DispatchTime>.Continuation],
                [AsyncStream<DispatchTime>.Continuation]
            ) in
            guard self.state == .running else { return (nil, [], []) }
            let listeners = Array(self.tickListeners.values)
            return (self.handlerBlock, listeners, self.repeats ? [] : self.finish())
        }
        chaosPoint(.timerState)  // between the state read and the calls: where a stop or release lands
        let now = DispatchTime.now()
        for listener in listeners { listener.yield(now) }
        for listener in ended { listener.finish() }
        handler?()
    }
}
