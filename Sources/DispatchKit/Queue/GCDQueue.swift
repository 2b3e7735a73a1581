import AtomicPrimitives
import Dispatch

/// A dispatch queue with a short vocabulary: Eki's `Queue`, alive again on Swift 6 and Linux.
///
/// ```swift
/// import Dispatch
/// import DispatchKit
/// import Foundation
///
/// let work = GCDQueue(name: "work")
/// work.async { print("in the background") }
/// let answer = work.sync { 42 }
/// GCDQueue.main <<< {
///     print("on main")
///     exit(0)
/// }
/// print(answer)  // 42
/// dispatchMain()  // gives the main thread to the main queue (on Linux nothing else drains it)
/// // Prints "on main"
/// ```
///
/// ``sync(file:line:_:)`` on the queue you are already in — directly, from a queue that targets it, or through nested `sync`
/// calls — runs the block inline instead of deadlocking. ``current`` names the queue the calling code runs in. Both
/// use queue-specific keys and a per-thread record, never queue identity: on Linux `DispatchQueue.main` is a new
/// object on every access.
///
/// > Note: On Linux, ``userInteractive`` and ``userInitiated`` are one underlying global queue, so they compare
/// > equal and ``current`` reports the same one for both.
public struct GCDQueue: Sendable, Equatable {
    /// Whether a queue made by ``init(name:kind:file:line:)`` runs one block at a time.
    public enum Kind: Sendable, Hashable {
        /// One block at a time, in order.
        case serial
        /// Many blocks at once; barrier blocks run alone.
        case concurrent
    }

    /// The underlying dispatch queue.
    public let dispatchQueue: DispatchQueue
    @usableFromInline
    let marker: QueueMarker

    private init(_ dispatchQueue: DispatchQueue, marker: QueueMarker) {
        self.dispatchQueue = dispatchQueue
        self.marker = marker
    }

    /// Creates a queue of its own.
    ///
    /// - Parameters:
    ///   - name: The queue's label, shown in debuggers and crash logs.
    ///   - kind: ``Kind/serial`` unless you say otherwise.
    ///   - file: Where the queue is made, for the lock-order checker's reports (see `LockOrderChecking`).
    ///   - line: The line where the queue is made.
    public init(name: String, kind: Kind = .serial, file: StaticString = #fileID, line: UInt = #line) {
        Self.registerMain()
        let queue = DispatchQueue(label: name, attributes: kind == .concurrent ? .concurrent : [])
        self.init(queue, marker: .custom(queue, isSerial: kind == .serial, file: file, line: line))
    }

    /// Two queues are equal when they denote the same underlying queue.
    public static func == (lhs: GCDQueue, rhs: GCDQueue) -> Bool {
        lhs.marker === rhs.marker
    }

    // MARK: The standard queues

    /// The main queue.
    public static let main = GCDQueue(.main, marker: .standard(.main, isSerial: true))
    /// The global queue for user-interactive work; on Linux the same queue as ``userInitiated``.
    public static let userInteractive = standard(.userInteractive)
    /// The global queue for user-initiated work.
    public static let userInitiated = standard(.userInitiated)
    /// The global queue of default quality of service.
    public static let `default` = standard(.default)
    /// The global queue for utility work.
    public static let utility = standard(.utility)
    /// The global queue for background work.
    public static let background = standard(.background)

    private static func standard(_ qos: DispatchQoS.QoSClass) -> GCDQueue {
        self.registerMain()
        #if os(Linux)
        if qos == .userInteractive { return self.userInitiated }
        #endif
        let queue = DispatchQueue.global(qos: qos)
        return GCDQueue(queue, marker: .standard(queue, isSerial: false))
    }

    /// Touched before asking which queue the caller runs in, so that main and every global queue carry their markers.
    ///
    /// Not as a queue is made: a global queue that carries a marker makes every `getSpecific` on its threads take a
    /// lock in libdispatch, which a `sync` from there would pay (measured: 12 ns on an 80 ns `sync`).
    static let standardQueuesRegistered: Bool = {
        _ = [main, userInteractive, userInitiated, `default`, utility, background]
        return true
    }()

    /// Installs main's marker, so that a `sync` called on main records it as a queue the code is inside.
    ///
    /// Every queue calls this as it is made, so that it has run before any `sync`. Global queues need no such care:
    /// being inside one never makes a `sync` deadlock.
    private static func registerMain() {
        _ = self.main
    }

    // MARK: Where the caller runs

    /// The innermost DispatchKit queue the calling code runs in: main, a global queue, or one made by
    /// ``init(name:kind:file:line:)``, counting `sync` calls that ran inline; `nil` elsewhere.
    ///
    /// Inside a serial `DispatchQueue` that DispatchKit did not make it is `nil`; inside a raw concurrent queue it may
    /// be the global queue that queue targets.
    public static var current: GCDQueue? {
        let id = QueueMarker.innermostID
        guard id != 0 else { return nil }
        // The queue the code runs in, or whose `sync` it is inside: alive, and its marker with it.
        let marker = QueueMarker.alive(withID: id)
        return marker.queue.map { GCDQueue($0, marker: marker) }
    }

    /// Whether the calling code runs in this queue: directly, in a queue that targets it, or through `sync` calls
    /// nested inside it.
    ///
    /// A global queue counts only when the code runs in it directly, as the innermost queue: global queues are
    /// concurrent and take no barriers, so being inside one never makes a `sync` onto it deadlock. An iteration of
    /// ``iterate(_:_:)`` is not inside the queues its caller is in.
    public var isCurrent: Bool {
        self.marker.isCurrent
    }

    // MARK: Running blocks

    /// Runs `block` asynchronously on this queue.
    ///
    /// - Parameter block: The work.
    /// - Returns: This queue, so that calls can be chained.
    @discardableResult
    @inlinable
    public func async(_ block: @escaping @Sendable () -> Void) -> GCDQueue {
        self.dispatchQueue.async(execute: self.marker.sent(block))
        if self.marker.isMain { self.noteSendToMain() }
        return self
    }

    /// Runs a `@MainActor` block asynchronously on this queue, which must be ``main``.
    ///
    /// Called as `GCDQueue.main.async { @MainActor in … }`: a closure that says `@MainActor` takes this overload, so it
    /// may touch main-actor state; any other takes ``async(_:)-(()->Void)``. A queue is a value, so the compiler
    /// cannot tell main from another queue: an unannotated closure written in a `@MainActor` type is nonisolated, and
    /// cannot touch that state. The rule for every API of the package is in "Isolation" of the async guide
    /// (Docs/AsyncCode.md).
    /// - Parameter block: The work; it runs on the main actor.
    /// - Returns: This queue, so that calls can be chained.
    /// - Precondition: This is ``main``. Any other queue runs blocks on its own threads, not on the main actor, so it
    ///   traps here rather than run the block there.
    @discardableResult
    public func async(onMainActor block: @escaping @MainActor @Sendable () -> Void) -> GCDQueue {
        self.async(self.mainActorBlock(block, api: "async"))
    }

    /// `block` as a nonisolated block for this queue, which must be main: the main actor's executor.
    private func mainActorBlock(
        _ block: @escaping @MainActor @Sendable () -> Void,
        api: String
    ) -> @Sendable () -> Void {
        guarantee(
            self.marker.isMain,
            "GCDQueue.\(api): a @MainActor block was sent to queue '\(self.dispatchQueue.label)', which does not run "
                + "it on the main actor; only GCDQueue.main takes @MainActor blocks"
        )
        return { MainActor.assumeIsolated(block) }
    }

    /// Runs each of `blocks` asynchronously on this queue, in order of submission.
    ///
    /// - Parameter blocks: The work items.
    /// - Returns: This queue, so that calls can be chained.
    @discardableResult
    public func async(_ blocks: [@Sendable () -> Void]) -> GCDQueue {
        for block in blocks { self.dispatchQueue.async(execute: self.marker.sent(block)) }
        if self.marker.isMain && !blocks.isEmpty { self.noteSendToMain() }
        return self
    }

    /// Tells ``MainQueueDoctor`` that a block was sent to the main queue.
    @usableFromInline
    func noteSendToMain() {
        MainQueueDoctor.noteSendToMain()
    }

    /// Runs `block` on this queue and waits for its result.
    ///
    /// Called on a thread already inside this queue — directly, from a queue that targets it, or through nested
    /// `sync` calls — it runs `block` inline instead of deadlocking.
    /// - Parameters:
    ///   - file: The caller's file, for the debug-build reports of the lock-order checker and of a `sync` from
    ///     inside a Swift concurrency task (see `LockOrderChecking`).
    ///   - line: The caller's line, for those reports.
    ///   - block: The work; it runs on the calling thread.
    /// - Returns: What `block` returns.
    /// - Throws: What `block` throws.
    /// - Precondition: Not called from an iteration of ``iterate(_:_:)`` onto a serial queue the caller of `iterate` is
    ///   in: the iteration could neither wait for the queue, which waits for it, nor run inside it beside the others.
    @inlinable
    public func sync<Output, Failure: Error>(
        file: StaticString = #fileID,
        line: UInt = #line,
        _ block: () throws(Failure) -> Output
    ) throws(Failure) -> Output {
        // Inlined and specialized in the caller, so that the only generic work, keeping the outcome, is done there;
        // the rest is the non-generic `run(_:)`.
        var outcome: Swift.Result<Output, Failure>?
        self.run(barrier: false, file: file, line: line) {
            outcome = Swift.Result { () throws(Failure) -> Output in try block() }
        }
        return try outcome!.get()
    }

    /// Runs `block` alone on this queue — after the blocks before it, before the ones after it — and waits for its
    /// result: Eki's `barrierSync`.
    ///
    /// On a serial queue this is ``sync(file:line:_:)``, and runs inline when the caller is inside the queue already. On a
    /// global queue there is no barrier.
    /// - Parameters:
    ///   - file: The caller's file, for the debug-build reports of the lock-order checker and of a `sync` from
    ///     inside a Swift concurrency task (see `LockOrderChecking`).
    ///   - line: The caller's line, for those reports.
    ///   - block: The work; it runs on the calling thread.
    /// - Returns: What `block` returns.
    /// - Throws: What `block` throws.
    /// - Precondition: The caller is not inside this queue, if it is a concurrent queue of your own: the barrier would
    ///   wait for the block that called it. The same holds for the caller of ``iterate(_:_:)`` in an iteration, and
    ///   ``sync(file:line:_:)``'s precondition holds too.
    @inlinable
    public func barrierSync<Output, Failure: Error>(
        file: StaticString = #fileID,
        line: UInt = #line,
        _ block: () throws(Failure) -> Output
    ) throws(Failure) -> Output {
        var outcome: Swift.Result<Output, Failure>?
        self.run(barrier: true, file: file, line: line) {
            outcome = Swift.Result { () throws(Failure) -> Output in try block() }
        }
        return try outcome!.get()
    }

    /// Runs `work` as ``sync(file:line:_:)`` does: inline if the calling code is inside this queue already; otherwise on the
    /// queue, with the DispatchKit queue the caller runs in recorded as one the code is inside meanwhile.
    ///
    /// With `barrier`, the block runs as a barrier. Traps where running inline would break the queue's rules and
    /// waiting would deadlock: see ``checkInline(_:barrier:)``.
    ///
    /// `file` and `line` are the caller's, for the debug-build reports of the lock-order checker and of a `sync` that
    /// blocks a Swift concurrency task.
    @usableFromInline
    func run(barrier: Bool, file: StaticString = #fileID, line: UInt = #line, _ work: () -> Void) {
        let context = self.marker.lookup.innermostID
        let list = self.marker.record.list
        // The common case, a caller in no sync and in no queue or a global one other than this, has nothing to record
        // or lend: no entry and no wrapping block. Nor is it on the main queue, which carries its marker by the time any
        // GCDQueue exists (see `registerMain()`), so the main-queue doctor has nothing to note.
        if list.innermost == nil && context != self.marker.id
            && (context == 0 || QueueMarker.reading(context, \.isGlobal))
        {
            return self.dispatch(barrier: barrier, offMain: true, file: file, line: line, work)
        }
        self.run(barrier: barrier, list: list, file: file, line: line, work)
    }

    /// ``run(barrier:_:)`` where the record may have a say; `list` is the calling thread's.
    @inline(never)
    private func run(barrier: Bool, list: SyncRecord.List, file: StaticString, line: UInt, _ work: () -> Void) {
        let context = self.recordedContext
        let record = self.marker.record
        let place = context == self.marker.id ? .inside : record.place(of: self.marker.id, in: list)
        if place != .outside {
            self.checkInline(place, barrier: barrier)
            return record.entering(self.marker.id, context: context, within: list) { _ in work() }
        }
        self.leaving(context, list) { list in
            guard list.innermost != nil else { return self.dispatch(barrier: barrier, file: file, line: line, work) }
            self.dispatch(barrier: barrier, file: file, line: line) { record.acting(for: list, work) }
        }
    }

    /// The marker id Dispatch reports for the caller, read as ``current`` reads it, with every standard queue's marker
    /// in place: what the entries made from here keep as their context.
    private var recordedContext: UInt {
        _ = Self.standardQueuesRegistered
        return self.marker.lookup.innermostID
    }

    /// Runs `work` on the queue and waits for it, as a barrier or not.
    ///
    /// This is where a `sync` blocks: the main-queue doctor can name it while it blocks the main queue, unless
    /// `offMain` says the caller is known not to run there. In debug builds, a call from inside a Swift concurrency
    /// task is reported, and a serial queue or a barrier joins the lock-order graph as a lock held while `work` runs
    /// (on whichever thread runs it: main's blocks run on the main thread).
    private func dispatch(
        barrier: Bool,
        offMain: Bool = false,
        file: StaticString,
        line: UInt,
        _ work: () -> Void
    ) {
        let api: StaticString = "GCDQueue.sync(_:)"
        let alternative: StaticString =
            "an actor, or `await withCheckedContinuation { c in queue.async { …; c.resume() } }`"
        guard offMain else {
            let call = BlockingCall(api: api, alternative: alternative, file: file, line: line)
            return BlockingCallCheck.blocking(call) { self.wait(barrier: barrier, file: file, line: line, work) }
        }
        // What `blocking` does, less the doctor's note, which only a call on the main queue needs.
        BlockingCallCheck.warnIfInsideTask(api: api, alternative: alternative, file: file, line: line)
        self.wait(barrier: barrier, file: file, line: line, work)
    }

    /// The part of ``dispatch(barrier:offMain:file:line:_:)`` that waits: `work` on the queue, seen by schedule chaos
    /// and the lock-order checker.
    private func wait(barrier: Bool, file: StaticString, line: UInt, _ work: () -> Void) {
        chaosPoint(.queue)
        #if DEBUG
        // Release builds compile the checker out; a closure made for it here would cost an allocation per `sync`.
        if let lock = self.marker.lockOrder, barrier || self.marker.isSerial {
            LockOrderChecker.willAcquire(lock, file: file, line: line)
            return self.marker.sync(self.dispatchQueue, barrier: barrier, file: file, line: line) {
                LockOrderChecker.didAcquire(lock, file: file, line: line)
                defer { LockOrderChecker.didRelease(lock) }
                work()
            }
        }
        #endif
        self.marker.sync(self.dispatchQueue, barrier: barrier, file: file, line: line, work)
    }

    /// Runs `wait`, which has blocks run elsewhere and waits for them, with the queue the caller runs in, `context`,
    /// recorded as one the code is inside; `wait` gets the list to lend to the blocks.
    ///
    /// A global queue, or none (`context` 0), is left out while the list is empty: being inside a global queue never
    /// makes a `sync` deadlock. Once the list has entries, it is recorded too, so that the innermost entry is never
    /// taken for the innermost queue when a later `sync` comes back to where the code is now.
    private func leaving(_ context: UInt, _ list: SyncRecord.List, _ wait: (SyncRecord.List) -> Void) {
        guard list.innermost != nil || (context != 0 && !QueueMarker.reading(context, \.isGlobal)) else {
            return wait(list)
        }
        self.marker.record.entering(context, context: context, within: list, wait)
    }

    /// Traps if a block may not run inline here, at `place`: as a barrier inside a concurrent queue of one's own (it
    /// would wait for the block that called it), or where the caller of ``iterate(_:_:)`` holds the queue and waits,
    /// unless it is concurrent and the block no barrier.
    private func checkInline(_ place: SyncRecord.Place, barrier: Bool) {
        let name = barrier ? "barrierSync" : "sync"
        let label = self.dispatchQueue.label
        let barrierWaits = barrier && self.marker.isCustom && !self.marker.isSerial
        if place == .heldByWaitingCaller {
            guarantee(
                !self.marker.isSerial && !barrierWaits,
                "GCDQueue.\(name): queue '\(label)' is held by the caller of iterate, which waits for this iteration: "
                    + (self.marker.isSerial
                        ? "waiting for the queue would deadlock, and running inside it would run two of its blocks at once"
                        : "a barrier would wait for that caller")
            )
        }
        guarantee(
            !barrierWaits,
            "GCDQueue.barrierSync: called from inside concurrent queue '\(label)'; the barrier would wait for the "
                + "block that called it"
        )
    }

    /// Runs `block` alone on this queue: after the blocks before it, before the ones after it.
    ///
    /// On a serial queue this is the same as ``async(_:)-(()->Void)``; on a global queue there is no barrier.
    /// - Parameter block: The work.
    /// - Returns: This queue, so that calls can be chained.
    @discardableResult
    public func barrierAsync(_ block: @escaping @Sendable () -> Void) -> GCDQueue {
        self.dispatchQueue.async(flags: .barrier, execute: self.marker.sent(block, barrier: true))
        if self.marker.isMain { self.noteSendToMain() }
        return self
    }

    /// Stops this queue from starting blocks until ``resume()``; a block that runs now runs to its end.
    ///
    /// Calls nest: the queue starts blocks again after as many ``resume()`` calls as there were `suspend()` calls. A
    /// suspended queue is kept alive until it is resumed, so releasing every copy of it does not crash, as releasing a
    /// suspended `DispatchQueue` does; its blocks then never run. A ``sync(file:line:_:)`` from outside waits until `resume()`.
    /// - Precondition: The queue was made by ``init(name:kind:file:line:)``: main and the global queues cannot be suspended.
    public func suspend() {
        guarantee(
            self.marker.isCustom,
            "GCDQueue.suspend: '\(self.dispatchQueue.label)' is main or a global queue; only a queue made by "
                + "init(name:kind:) can be suspended"
        )
        self.marker.suspend(self.dispatchQueue)
    }

    /// Lets this queue start blocks again after ``suspend()``.
    ///
    /// - Precondition: The queue is suspended: every `resume()` follows a ``suspend()``. An unbalanced resume, which
    ///   libdispatch would turn into a crash, traps here with a message that names the queue.
    public func resume() {
        self.marker.resume(self.dispatchQueue)
    }

    /// Whether ``suspend()`` was called more often than ``resume()``.
    public var isSuspended: Bool {
        self.marker.isSuspended
    }

    /// Runs `block` on this queue after `seconds`.
    ///
    /// A delay too long to represent — about 292 years or more, `infinity` included — means never: the block is not
    /// scheduled.
    /// - Parameters:
    ///   - seconds: The delay; the block runs no earlier.
    ///   - block: The work.
    /// - Returns: This queue, so that calls can be chained.
    /// - Precondition: `seconds` is a number, 0 or more (not NaN).
    @discardableResult
    public func after(_ seconds: Double, _ block: @escaping @Sendable () -> Void) -> GCDQueue {
        self.after(TimeSpan.seconds(seconds).interval("GCDQueue.after: seconds"), block)
    }

    /// Runs `block` on this queue after `delay`: `after(_:_:)` with a `Duration`.
    ///
    /// A delay too long to represent in nanoseconds — about 292 years or more — means never: the block is not
    /// scheduled.
    /// - Parameters:
    ///   - delay: The delay; the block runs no earlier.
    ///   - block: The work.
    /// - Returns: This queue, so that calls can be chained.
    /// - Precondition: `delay` is 0 or more.
    @discardableResult
    public func after(_ delay: Duration, _ block: @escaping @Sendable () -> Void) -> GCDQueue {
        self.after(TimeSpan.duration(delay).interval("GCDQueue.after: delay"), block)
    }

    /// Runs `block` after `delay`, or never if it is `nil`.
    private func after(_ delay: DispatchTimeInterval?, _ block: @escaping @Sendable () -> Void) -> GCDQueue {
        guard let delay else { return self }
        self.dispatchQueue.asyncAfter(deadline: .now() + delay, execute: self.marker.sent(block))
        if self.marker.isMain { self.noteSendToMain() }
        return self
    }

    /// Runs a `@MainActor` block on this queue, which must be ``main``, after `seconds`.
    ///
    /// Called as `GCDQueue.main.after(0.5) { @MainActor in … }`, as ``async(onMainActor:)`` is.
    /// - Parameters:
    ///   - seconds: The delay; the block runs no earlier. A delay too long to represent means never.
    ///   - block: The work; it runs on the main actor.
    /// - Returns: This queue, so that calls can be chained.
    /// - Precondition: This is ``main``, and `seconds` is a number, 0 or more (not NaN).
    @discardableResult
    public func after(_ seconds: Double, onMainActor block: @escaping @MainActor @Sendable () -> Void) -> GCDQueue {
        self.after(seconds, self.mainActorBlock(block, api: "after"))
    }

    /// Runs a `@MainActor` block on this queue, which must be ``main``, after `delay`: `after(_:onMainActor:)` with
    /// a `Duration`.
    ///
    /// - Parameters:
    ///   - delay: The delay; the block runs no earlier. A delay too long to represent means never.
    ///   - block: The work; it runs on the main actor.
    /// - Returns: This queue, so that calls can be chained.
    /// - Precondition: This is ``main``, and `delay` is 0 or more.
    @discardableResult
    public func after(_ delay: Duration, onMainActor block: @escaping @MainActor @Sendable () -> Void) -> GCDQueue {
        self.after(delay, self.mainActorBlock(block, api: "after"))
    }

    /// Runs `block` `count` times with indexes `0..<count`, and returns once all have run.
    ///
    /// On a serial queue the iterations run in order, one at a time, as one ``sync(file:line:_:)`` block: inline when the caller
    /// is inside the queue already. On a concurrent queue the caller is inside, they run inline, in order. Otherwise
    /// they run in parallel inside the queue, the calling thread among the ones that run them, as `concurrentPerform`
    /// does: an `iterate` nested in another's iterations ends even when Dispatch has no thread to spare. The caller
    /// enters the queue as a `sync` does: after a barrier, and after blocks of the queue that no thread has started
    /// yet, which may wait for Dispatch to add a thread when every thread is busy.
    ///
    /// An iteration that runs in parallel is inside this queue, not inside the queues its caller is in: the caller
    /// holds them while it waits. A `sync` from an iteration onto a serial one of them (or a `barrierSync` onto a
    /// concurrent one of your own) traps, as it could neither wait for the queue, which waits for it, nor run inside
    /// it beside the other iterations.
    /// - Parameters:
    ///   - count: How many iterations.
    ///   - block: One iteration.
    /// - Precondition: `count` is 0 or more.
    public func iterate(_ count: Int, _ block: @Sendable (Int) -> Void) {
        guarantee(count >= 0, "GCDQueue.iterate: count must be 0 or more, got \(count)")
        if self.marker.isSerial || self.isCurrent {
            return self.sync {
                for index in 0..<count { block(index) }
            }
        }
        // One slot of strided indexes per processor the process may run on, run by the caller and by workers, each
        // entering the queue as a `sync` does, so that barriers and suspension hold for them. Dispatch makes a `sync`
        // wait behind the queue's blocks that no thread has started yet: so the workers wait for a thread on the global
        // queue, not on this one, where they would stand in the way of every caller's `sync`. The caller runs slots
        // too, and then waits only for the slots other threads took, never for a worker Dispatch has not started. Not
        // `concurrentPerform` inside a `sync`: on Linux, libdispatch's apply nested in a sync onto a concurrent queue
        // corrupted the heap about 1 run in 40 (seen at thread exit).
        let slots = Swift.min(count, usableProcessorCount())
        guard slots > 0 else { return }
        let record = self.marker.record
        let qos = self.dispatchQueue.qos.qosClass
        let pool = DispatchQueue.global(qos: qos == .unspecified ? .default : qos)
        self.leaving(self.recordedContext, record.list) { list in
            withoutActuallyEscaping(block) { block in
                let share = IterationShare(count: count, slots: slots, block: block)
                for _ in 1..<slots {
                    pool.async {
                        // A worker that starts once every slot is taken leaves without waiting for the queue.
                        guard share.hasUnclaimedSlot else { return }
                        self.dispatchQueue.sync { record.working(for: list) { share.runSlots() } }
                    }
                }
                self.dispatchQueue.sync { record.working(for: list) { share.runSlots() } }
                share.waitForClaimedSlots()
            }
        }
    }
}
