import Dispatch
import Synchronization

/// A counting semaphore: a number of resources that threads take with ``wait(file:line:)`` and give back with ``signal()``.
///
/// One type serves all three ways semaphores are used:
/// - ``Kind/binary`` starts with one resource: a lock that any thread may release.
/// - ``Kind/barrier`` starts with none: ``wait(file:line:)`` blocks until another thread calls ``signal()``. This is the
///   default, and what Queuer's `Semaphore` was.
/// - ``Kind/counting(_:)`` starts with `n`: at most `n` threads are inside ``perform(file:line:_:)`` at once.
///
/// ```swift
/// import AtomicPrimitives
/// import Dispatch
///
/// let done = CountingSemaphore()  // .barrier
/// DispatchQueue.global().async {
///     work()
///     done.signal()
/// }
/// let result = done.wait(.now() + .seconds(5))
/// print(result)  // success
/// ```
///
/// Unlike a bare `DispatchSemaphore`, releasing a `CountingSemaphore` is safe in any state, also while some of its
/// resources are taken. Its waits are visible to ThreadSanitizer.
///
/// As with `DispatchSemaphore`, a wait that finds a free resource while nobody waits, and a signal while nobody waits,
/// cost one atomic compare-exchange and take no lock. Only when somebody has to wait do the lock and the line come
/// in. A blocked thread in line watches for its own grant for a moment before it sleeps (while fewer threads watch
/// than there are processors), so a `signal()` that hands a resource to a thread still watching wakes nobody, and one
/// that hands it to a sleeping thread wakes exactly that thread.
///
/// ### From async code
///
/// Tasks wait without blocking a thread: ``acquire(file:line:)`` suspends and throws `CancellationError` when its task is
/// cancelled, ``wait(timeout:file:line:)`` gives up after a `Duration`, and ``withPermit(isolation:file:line:_:)`` runs a body under a
/// resource. Blocked threads and suspended tasks wait in one line, and each `signal()` hands its resource to the
/// oldest waiter, whichever kind it is: nobody overtakes, and a cancellation or timeout racing a signal either
/// leaves with the resource or leaves it to the next waiter, never loses or duplicates it.
///
/// The blocking calls, ``wait(file:line:)``, ``wait(_:file:line:)-(DispatchTime,_,_)`` and ``perform(file:line:_:)``, are unavailable
/// from async code: the compiler names the async form instead. Write `try await semaphore.acquire()` rather than
/// `try await semaphore.wait()`: in an `async` function both suspend, but in the top-level code of a `main.swift`
/// the second picks the blocking overload, and is an error.
///
/// > Note: ``signal()`` and ``continue()`` return a value. In a closure whose last expression is such a call, and
/// > whose type must be `() -> Void`, write `_ = semaphore.signal()`.
public final class CountingSemaphore {
    /// How many resources a new semaphore has.
    public enum Kind: Sendable, Hashable {
        /// One resource: the first ``CountingSemaphore/wait(file:line:)`` passes, the next waits for a signal.
        case binary
        /// No resources: every ``CountingSemaphore/wait(file:line:)`` waits for a signal.
        case barrier
        /// `n` resources, where `n` is 0 or more.
        case counting(Int)

        var resources: Int {
            switch self {
            case .binary: 1
            case .barrier: 0
            case .counting(let count): count
            }
        }
    }

    /// The free resources, or that somebody waits: the fast path of waits and signals that need no line.
    let count: SemaphoreCount
    /// Guards `line`, and every change of `count` into or out of ``SemaphoreCount/queued``.
    let core = LockCore()
    // Safety: `line`, and every waiter in it, are only read or written while `core` is locked. While anyone waits in
    // `line`, `count` is `queued` (see ``SemaphoreCount``).
    var line = SemaphoreWaiterLine()

    /// Who is inside ``perform(file:line:_:)`` or `withPermit` of a semaphore made with one resource.
    ///
    /// A thread's ``currentThreadID()``, or a task's identity with its lowest bit set; 0 for nobody. For ``WaitReport``, which
    /// names the holder of a lock-like semaphore as it names a lock's owner. Written with relaxed stores, as a lock's
    /// owner is: a semaphore with more resources, or one given more by extra signals, has no one holder to name, and
    /// the report names the first it finds or none.
    let holder = Atomic<UInt>(0)
    /// Where ``holder`` took the resource, a ``PackedSite``; written before `holder`.
    let holderSite = Atomic<UInt>(0)
    /// Whether the semaphore was made with one resource, and keeps ``holder``.
    let keepsHolder: Bool

    /// The name given at `init`, for ``WaitReport``; `nil` for none.
    public let name: String?
    /// Where the semaphore was made, a ``PackedSite``, for ``WaitReport``.
    let madeAt: UInt

    /// Creates a semaphore of the given kind.
    ///
    /// - Parameters:
    ///   - kind: How many resources it starts with; ``Kind/barrier`` (none) unless you say otherwise.
    ///   - name: What ``WaitReport`` calls it; `nil` (the default) for none.
    ///   - file: Where the semaphore is made, for ``WaitReport``; leave the default.
    ///   - line: Where the semaphore is made; leave the default.
    /// - Precondition: A ``Kind/counting(_:)`` count is 0 or more.
    public init(_ kind: Kind = .barrier, name: String? = nil, file: StaticString = #fileID, line: UInt = #line) {
        guarantee(
            kind.resources >= 0,
            "CountingSemaphore: resources must be 0 or more, got \(kind.resources) (from \(kind))"
        )
        self.count = SemaphoreCount(resources: kind.resources)
        self.keepsHolder = kind.resources == 1
        self.name = name
        self.madeAt = PackedSite.pack(file: file, line: line)
    }

    /// Creates a semaphore with `resources` resources; the same as `init(.counting(resources))`.
    ///
    /// - Parameters:
    ///   - resources: How many threads may pass ``wait(file:line:)`` before one has to wait; 0 or more.
    ///   - name: What ``WaitReport`` calls it; `nil` (the default) for none.
    ///   - file: Where the semaphore is made, for ``WaitReport``; leave the default.
    ///   - line: Where the semaphore is made; leave the default.
    /// - Precondition: `resources` is 0 or more.
    public convenience init(resources: Int, name: String? = nil, file: StaticString = #fileID, line: UInt = #line) {
        self.init(.counting(resources), name: name, file: file, line: line)
    }

    /// Takes a resource, waiting for as long as it takes for one to be free.
    ///
    /// It blocks the calling thread, and is unavailable from async code: there, `try await acquire()` suspends
    /// instead. In debug builds, a call from inside a task (through a synchronous function) that has to wait is
    /// reported once per call site (see ``LockOrderChecking``); one that takes a free resource is not, and
    /// ``withBlockingAllowed(_:)`` allows one.
    /// - Parameters:
    ///   - file: The caller's file, for that report.
    ///   - line: The caller's line, for that report.
    @available(
        *,
        noasync,
        message:
            "CountingSemaphore.wait() blocks the calling thread; in async code use `try await semaphore.acquire()` (top-level code with an `await` anywhere is async code too)"
    )
    public func wait(file: StaticString = #fileID, line: UInt = #line) {
        let call = BlockingCall(
            api: "CountingSemaphore.wait()",
            alternative: "try await semaphore.acquire()",
            file: file,
            line: line
        )
        _ = self.wait(until: .never, as: call)
    }

    /// Takes a resource, waiting until `timeout` at the latest.
    ///
    /// It blocks the calling thread, and is unavailable from async code: there, `await wait(timeout:)` with a
    /// `Duration` suspends instead (`.zero` takes only a free resource, as `.now()` does here). In debug builds, a call
    /// from inside a task (through a synchronous function) that has to wait is reported once per call site; one that
    /// takes a free resource, or only looks, is not.
    /// - Parameters:
    ///   - timeout: The latest time to give up; `.now()`, or any time already past, only takes a resource that is free
    ///     right away. `.distantFuture` waits without a limit.
    ///   - file: The caller's file, for that report.
    ///   - line: The caller's line, for that report.
    /// - Returns: `.success` if a resource was taken, `.timedOut` if the deadline passed first.
    @available(
        *,
        noasync,
        message:
            "CountingSemaphore.wait(_:) blocks the calling thread; in async code use `await semaphore.wait(timeout:)` with a Duration (top-level code with an `await` anywhere is async code too)"
    )
    public func wait(_ timeout: DispatchTime, file: StaticString = #fileID, line: UInt = #line) -> DispatchTimeoutResult
    {
        self.wait(until: Deadline(timeout), as: Self.timedWait(file: file, line: line))
    }

    /// Takes a resource, waiting for `timeout` at most: ``wait(_:file:line:)-(DispatchTime,_,_)`` with a `Duration` from now.
    ///
    /// It blocks the calling thread, and is unavailable from async code: there, `await wait(timeout:)` suspends
    /// instead. In debug builds, a call from inside a task (through a synchronous function) that has to wait is
    /// reported once per call site; one that takes a free resource, or only looks, is not.
    /// - Parameters:
    ///   - timeout: How long to wait at most. Zero or less (or less than a nanosecond) takes only a resource that is
    ///     free right away, as `.now()` does; a duration too long to represent in nanoseconds (about 292 years or
    ///     more, up to the largest `Duration`) waits without a limit.
    ///   - file: The caller's file, for that report.
    ///   - line: The caller's line, for that report.
    /// - Returns: `.success` if a resource was taken, `.timedOut` if the time ran out first.
    @available(
        *,
        noasync,
        message:
            "CountingSemaphore.wait(_:) blocks the calling thread; in async code use `await semaphore.wait(timeout:)` (top-level code with an `await` anywhere is async code too)"
    )
    public func wait(_ timeout: Duration, file: StaticString = #fileID, line: UInt = #line) -> DispatchTimeoutResult {
        self.wait(until: Deadline(after: timeout), as: Self.timedWait(file: file, line: line))
    }

    /// How the reports name the timed blocking waits.
    private static func timedWait(file: StaticString, line: UInt) -> BlockingCall {
        BlockingCall(
            api: "CountingSemaphore.wait(_:)",
            alternative: "await semaphore.wait(timeout:)",
            file: file,
            line: line
        )
    }

    /// Takes a resource as ``wait(file:line:)`` does, for the package's own blocking commands: if it has to wait, the
    /// report of a blocking call from inside a task, and the main-queue doctor, name `call`, the public call the user
    /// made.
    ///
    /// - Parameter call: The user's blocking call; `nil` reports nothing (for a wait its caller reports itself).
    @usableFromInline
    package func wait(as call: BlockingCall?) {
        _ = self.wait(until: .never, as: call)
    }

    /// Gives a resource back, waking one waiting thread if there is one.
    ///
    /// Signals beyond the starting count add resources, as with `DispatchSemaphore`.
    /// - Returns: Non-zero if a waiting thread was woken, 0 otherwise: a waiter that an earlier `signal()` already woke
    ///   is not counted again.
    /// - Precondition: The resource count stays at most `Int.max`.
    @discardableResult
    public func signal() -> Int {
        chaosPoint(.semaphoreLine)
        if self.count.giveBackIfNobodyWaits() { return 0 }
        return self.handToOldest()
    }

    /// The rest of ``signal()`` when somebody waits: hands the resource to the oldest waiter that is still there, and
    /// wakes it if it sleeps, after the lock is released; returns 1 then, 0 if the resource went back to the count.
    private func handToOldest() -> Int {
        self.core.lock(onReentry: { CountingSemaphore.trapReentry() })
        // The line may have emptied since the first look.
        if self.count.giveBackIfNobodyWaits() {
            self.core.unlock()
            return 0
        }
        while let waiter = self.line.removeFirst() {
            // Lets a test land a waiter's deadline exactly here, between leaving the line and the grant.
            chaosPoint(.semaphoreLine)
            guard let ending = waiter.grant() else { continue }
            if self.line.isEmpty { self.count.lineEmptied(leaving: 0) }
            self.core.unlock()
            ending.complete()
            return 1
        }
        // Every waiter left was a thread whose deadline won: the resource is free.
        self.count.lineEmptied(leaving: 1)
        self.core.unlock()
        return 0
    }

    /// Gives a resource back: Queuer's name for ``signal()``.
    ///
    /// - Returns: Non-zero if a waiting thread was woken, 0 otherwise.
    @discardableResult
    public func `continue`() -> Int {
        self.signal()
    }

    /// Takes a resource, runs `body`, and gives the resource back, also when `body` throws.
    ///
    /// It blocks the calling thread while it waits, and is unavailable from async code: there,
    /// `try await withPermit { … }` suspends instead.
    /// - Parameters:
    ///   - file: The caller's file, for the report of a blocking call from inside a task (see ``wait(file:line:)``).
    ///   - line: The caller's line, for that report.
    ///   - body: Runs on the calling thread once a resource is taken.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @available(
        *,
        noasync,
        message:
            "CountingSemaphore.perform(_:) blocks the calling thread; in async code use `try await semaphore.withPermit { … }` (top-level code with an `await` anywhere is async code too)"
    )
    @discardableResult
    @inlinable
    public func perform<Result, Failure: Error>(
        file: StaticString = #fileID,
        line: UInt = #line,
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let holder = self.takeForPerform(file: file, line: line)
        defer { self.giveBackAfterPerform(holder) }
        return try body()
    }

    /// The start of ``perform(file:line:_:)``, out of line: takes a resource, waiting as `perform` if it must, and
    /// notes the calling thread as the holder; returns what to pass to ``giveBackAfterPerform(_:)``.
    ///
    /// `perform` itself is inlined into its caller, so that it is specialized for the caller's body and result (a
    /// generic call, with the body behind a closure context, cost a few nanoseconds more per call).
    @usableFromInline
    func takeForPerform(file: StaticString, line: UInt) -> UInt {
        let call = BlockingCall(
            api: "CountingSemaphore.perform(_:)",
            alternative: "try await semaphore.withPermit { … }",
            file: file,
            line: line
        )
        _ = self.wait(until: .never, as: call)
        return self.noteHolder(currentThreadID(), file: file, line: line)
    }

    /// The end of ``perform(file:line:_:)``, out of line: clears the holder `holder` that
    /// ``takeForPerform(file:line:)`` noted, and gives the resource back.
    @usableFromInline
    func giveBackAfterPerform(_ holder: UInt) {
        self.clearHolder(holder)
        self.signal()
    }

    /// Records `id` as the one holder of a one-resource semaphore, taken at `file`:`line`; returns what to pass to
    /// ``clearHolder(_:)``: 0 if the semaphore keeps no holder.
    @inline(__always)
    func noteHolder(_ id: UInt, file: StaticString, line: UInt) -> UInt {
        guard self.keepsHolder else { return 0 }
        self.holderSite.store(PackedSite.pack(file: file, line: line), ordering: .releasing)
        self.holder.store(id, ordering: .releasing)
        return id
    }

    /// Clears the holder that ``noteHolder(_:file:line:)`` recorded, unless another has replaced it since.
    @inline(__always)
    func clearHolder(_ id: UInt) {
        if id != 0 && self.holder.load(ordering: .relaxed) == id { self.holder.store(0, ordering: .relaxed) }
    }

    /// How many threads and tasks wait in line right now; for tests that need to know a waiter is parked.
    package var waiterCount: Int {
        self.core.lock(onReentry: { CountingSemaphore.trapReentry() })
        defer { self.core.unlock() }
        return self.line.count
    }

    /// How many tasks' timed waits exist in the process, waiting or not yet released; for tests that check that no
    /// deadline timer outlives its wait.
    package static var liveTimedWaits: Int {
        SemaphoreWaiter.liveWithDeadline.load(ordering: .relaxed)
    }

    /// Takes a resource, or waits in line for one until `deadline`.
    ///
    /// A free resource is taken, and a deadline of now gives up, without parking the thread: only a wait that parks
    /// is `call`, a blocking call, to the report of one made from inside a task and to the main-queue doctor.
    /// - Returns: `.success` if a resource was taken, `.timedOut` if the deadline passed first.
    private func wait(until deadline: Deadline, as call: BlockingCall?) -> DispatchTimeoutResult {
        chaosPoint(.semaphoreLine)
        if self.takeIfFree() { return .success }
        let limit: UInt64
        switch deadline {
        case .now: return .timedOut
        case .at(let time): limit = time.uptimeNanoseconds
        case .never: limit = .max
        }
        guard let call else { return self.waitInLine(untilUptimeNanoseconds: limit, as: nil) }
        return BlockingCallCheck.blocking(call) { self.waitInLine(untilUptimeNanoseconds: limit, as: call) }
    }

    /// Waits in line for a resource until `deadline` (`.max`: without a limit), unless one is free by now.
    ///
    /// The thread watches its own grant, then sleeps (``ParkedThread``): a `signal()` that finds it still watching
    /// costs no wake-up. If the deadline wins the race with a grant, the grant goes to the next waiter instead.
    /// Once it sleeps, the wait report shows it waiting for `call`.
    private func waitInLine(untilUptimeNanoseconds deadline: UInt64, as call: BlockingCall?) -> DispatchTimeoutResult {
        let thread = ParkedThread()
        self.core.lock(onReentry: { CountingSemaphore.trapReentry() })
        if self.count.takeOrQueue() {
            self.core.unlock()
            return .success
        }
        let waiter = SemaphoreWaiter(thread: thread)
        self.line.append(waiter)
        self.core.unlock()
        if thread.waitForGrant(untilUptimeNanoseconds: deadline, reporting: call.map { (self, $0) }) {
            return .success
        }
        // Timed out: the grant can no longer come. Out of the line, unless a signal already took it out and moved on.
        self.core.lock(onReentry: { CountingSemaphore.trapReentry() })
        if waiter.state == .queued {
            self.takeOutOfLine(waiter)
            waiter.state = .timedOut
        }
        self.core.unlock()
        return .timedOut
    }

    /// Takes `waiter`, which is in the line, out of it; with the lock held.
    func takeOutOfLine(_ waiter: SemaphoreWaiter) {
        self.line.remove(waiter)
        if self.line.isEmpty { self.count.lineEmptied(leaving: 0) }
    }

    /// Takes a resource if one is free right now and nobody waits for one.
    @inline(__always)
    func takeIfFree() -> Bool {
        self.count.takeIfFree()
    }

    static func trapReentry() -> Never {
        halt("CountingSemaphore: internal lock re-entered; this is a bug in ConcurrencyKit.")
    }
}

// Safety: `line`, and every waiter in it, are only touched while `core` is locked; `count` is atomic.
extension CountingSemaphore: @unchecked Sendable {}

extension CountingSemaphore: WaitTarget {
    package var waitResource: WaitReport.Resource {
        WaitReport.Resource(
            type: "CountingSemaphore",
            name: self.name,
            madeAt: PackedSite.describe(self.madeAt),
            identity: WaitRecords.identity(of: self)
        )
    }

    /// The one holder of a one-resource semaphore, if it is inside `perform` or `withPermit`.
    package var waitHolding: WaitHolding {
        guard let holder = WaitHolding.read(holder: self.holder, site: self.holderSite) else {
            return WaitHolding(state: self.count.waitDescription)
        }
        return WaitHolding(
            holders: [.init(id: holder.word & ~1, isTask: holder.word & 1 != 0, site: holder.site)],
            state: self.count.waitDescription
        )
    }
}
