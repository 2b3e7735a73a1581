import Dispatch
import Synchronization

/// Blocks and tasks tracked together, to be waited for or followed by a notification: Eki's `Group`.
///
/// ```swift
/// import DispatchKit
///
/// let group = GCDGroup(queue: .utility)
/// group <<< { download("a") } <<< { download("b") }
/// await group.waitForAll()
/// print("both done")
/// // Prints "both done"
/// ```
///
/// To be called back instead of waiting, pass ``notify(_:)-(()->Void)`` a block.
public final class GCDGroup: Sendable {
    /// The underlying dispatch group.
    public let dispatchGroup = DispatchGroup()
    /// Where blocks added with ``async(_:)-(()->Void)`` and ``notify(_:)-(()->Void)`` run.
    public let queue: GCDQueue
    /// How many ``enter()`` calls no ``leave()`` has matched yet: `DispatchGroup` dies without a word on one leave
    /// too many.
    private let unmatchedEnters = Atomic<Int>(0)

    /// Creates an empty group.
    ///
    /// - Parameter queue: Where the group's bare blocks run; the background queue unless you say otherwise.
    public init(queue: GCDQueue = .background) {
        self.queue = queue
    }

    /// Runs `block` on the group's queue as part of the group.
    ///
    /// - Parameter block: The work.
    /// - Returns: This group, so that calls can be chained.
    @discardableResult
    public func async(_ block: @escaping @Sendable () -> Void) -> GCDGroup {
        self.queue.dispatchQueue.async(group: self.dispatchGroup, execute: self.queue.marker.sent(block))
        return self
    }

    /// Runs `task` on its own queue as part of the group.
    ///
    /// - Parameter task: The task; the group counts it until its block has run.
    /// - Returns: This group, so that calls can be chained.
    @discardableResult
    public func async(_ task: GCDTask) -> GCDGroup {
        self.dispatchGroup.enter()
        task.queue.async { [dispatchGroup] in
            task.sync()
            dispatchGroup.leave()
        }
        return self
    }

    /// Runs each of `blocks` on the group's queue as part of the group.
    ///
    /// - Parameter blocks: The work items.
    /// - Returns: This group, so that calls can be chained.
    @discardableResult
    public func async(_ blocks: [@Sendable () -> Void]) -> GCDGroup {
        for block in blocks { self.async(block) }
        return self
    }

    /// Runs each of `tasks` on its own queue as part of the group.
    ///
    /// - Parameter tasks: The tasks.
    /// - Returns: This group, so that calls can be chained.
    @discardableResult
    public func async(_ tasks: [GCDTask]) -> GCDGroup {
        for task in tasks { self.async(task) }
        return self
    }

    /// Counts work started elsewhere as part of the group until a matching ``leave()``.
    public func enter() {
        self.dispatchGroup.enter()
        // Counted once entered, and released, so that a leave() it allows always finds the group entered.
        self.unmatchedEnters.add(1, ordering: .releasing)
    }

    /// Marks work counted by ``enter()`` as done.
    ///
    /// - Precondition: An earlier ``enter()`` on this group is not matched yet: every `leave()` follows an `enter()`.
    ///   One leave too many, which `DispatchGroup` would turn into a crash without a message, traps with one.
    public func leave() {
        var unmatched = self.unmatchedEnters.load(ordering: .relaxed)
        repeat {
            guarantee(
                unmatched > 0,
                "GCDGroup.leave: called with no enter() left to match; every leave() must follow an enter() on the "
                    + "same group"
            )
            let exchange = self.unmatchedEnters.compareExchange(
                expected: unmatched,
                desired: unmatched - 1,
                ordering: .acquiring
            )
            if exchange.exchanged { break }
            unmatched = exchange.original
        } while true
        self.dispatchGroup.leave()
    }

    /// Runs `block` on the group's queue once everything in the group has finished.
    ///
    /// The notification is not part of the group: ``waitForAll(file:line:)`` and ``wait(file:line:)`` can
    /// return before it runs.
    ///
    /// - Parameter block: The notification.
    public func notify(_ block: @escaping @Sendable () -> Void) {
        self.dispatchGroup.notify(queue: self.queue.dispatchQueue, execute: self.queue.marker.sent(block))
    }

    /// Runs `task` on its own queue once everything in the group has finished.
    ///
    /// As for ``notify(_:)-(()->Void)``, the notification is not part of the group.
    ///
    /// - Parameter task: The notification.
    public func notify(_ task: GCDTask) {
        self.dispatchGroup.notify(queue: task.queue.dispatchQueue, execute: task.queue.marker.sent { task.sync() })
    }

    /// Blocks the calling thread until everything in the group has finished.
    ///
    /// It is unavailable from async code: there, `await waitForAll()` suspends instead. In debug builds, a call from
    /// inside a task (through a synchronous function) that has to wait is reported once per call site (see
    /// `LockOrderChecking`); one that finds the group empty is not.
    /// - Parameters:
    ///   - file: The caller's file, for that report.
    ///   - line: The caller's line, for that report.
    @available(
        *,
        noasync,
        message:
            "GCDGroup.wait() blocks the calling thread; in async code use `await group.waitForAll()` (top-level code with an `await` anywhere is async code too)"
    )
    public func wait(file: StaticString = #fileID, line: UInt = #line) {
        let call = BlockingCall(api: "GCDGroup.wait()", alternative: "await group.waitForAll()", file: file, line: line)
        _ = self.wait(until: .never, as: call)
    }

    /// Blocks the calling thread until everything in the group has finished, or until `timeout`.
    ///
    /// It is unavailable from async code: there, `await waitForAll()` suspends instead. In debug builds, a call from
    /// inside a Swift concurrency task (through a synchronous function) that has to wait is reported once per call
    /// site; one that finds the group empty, or only looks, is not.
    /// - Parameters:
    ///   - timeout: The latest time to give up; `.now()`, or any time already past, only looks.
    ///   - file: The caller's file, for that report.
    ///   - line: The caller's line, for that report.
    /// - Returns: `.success` if the group finished, `.timedOut` otherwise.
    @available(
        *,
        noasync,
        message:
            "GCDGroup.wait(timeout:) blocks the calling thread; in async code use `await group.waitForAll()` (top-level code with an `await` anywhere is async code too)"
    )
    public func wait(timeout: DispatchTime, file: StaticString = #fileID, line: UInt = #line) -> DispatchTimeoutResult {
        self.wait(until: Deadline(timeout), as: Self.timedWait(file: file, line: line))
    }

    /// Blocks the calling thread until everything in the group has finished, or for `timeout` at most:
    /// ``wait(timeout:file:line:)-(DispatchTime,_,_)`` with a `Duration` from now.
    ///
    /// It is unavailable from async code: there, `await waitForAll()` suspends instead. In debug builds, a call from
    /// inside a Swift concurrency task (through a synchronous function) that has to wait is reported once per call
    /// site; one that finds the group empty, or only looks, is not.
    /// - Parameters:
    ///   - timeout: How long to wait at most. Zero or less (or less than a nanosecond) only looks, as `.now()` does;
    ///     a duration too long to represent in nanoseconds (about 292 years or more, up to the largest `Duration`)
    ///     waits without a limit.
    ///   - file: The caller's file, for that report.
    ///   - line: The caller's line, for that report.
    /// - Returns: `.success` if the group finished, `.timedOut` otherwise.
    @available(
        *,
        noasync,
        message:
            "GCDGroup.wait(timeout:) blocks the calling thread; in async code use `await group.waitForAll()` (top-level code with an `await` anywhere is async code too)"
    )
    public func wait(timeout: Duration, file: StaticString = #fileID, line: UInt = #line) -> DispatchTimeoutResult {
        self.wait(until: Deadline(after: timeout), as: Self.timedWait(file: file, line: line))
    }

    /// How the reports name the timed blocking waits.
    private static func timedWait(file: StaticString, line: UInt) -> BlockingCall {
        BlockingCall(api: "GCDGroup.wait(timeout:)", alternative: "await group.waitForAll()", file: file, line: line)
    }

    /// Waits for the group until `deadline`: a look first, so that only a wait that parks is `call`, a blocking call.
    private func wait(until deadline: Deadline, as call: BlockingCall) -> DispatchTimeoutResult {
        if self.dispatchGroup.wait(timeout: .now()) == .success { return .success }
        if deadline == .now { return .timedOut }
        return BlockingCallCheck.blocking(call, on: self) { self.dispatchGroup.wait(timeout: deadline.dispatchTime) }
    }

    /// Suspends the calling task, without blocking a thread, until everything in the group has finished.
    ///
    /// The name has no blocking overload, so it suspends wherever it is written, also in the top-level code of a
    /// `main.swift`, where `await group.wait()` picks the blocking ``wait(file:line:)`` and does not compile.
    ///
    /// While it is suspended, the task shows in `WaitReport` as waiting for the group, with `file` and `line`.
    ///
    /// - Parameters:
    ///   - file: Where the call is made, for `WaitReport`; leave the default.
    ///   - line: Where the call is made, for `WaitReport`; leave the default.
    public func waitForAll(file: StaticString = #fileID, line: UInt = #line) async {
        var parked: TaskWaitEntry?
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            parked = TaskWaits.begin(
                on: self,
                as: BlockingCall(api: "GCDGroup.waitForAll()", alternative: "", file: file, line: line)
            )
            self.dispatchGroup.notify(queue: .global()) { continuation.resume() }
        }
        if let parked { TaskWaits.end(parked) }
    }

    /// Suspends the calling task until everything in the group has finished: the same as ``waitForAll(file:line:)``.
    ///
    /// In an `async` function this is the overload `await group.wait()` calls. In the top-level code of a `main.swift`
    /// that call picks the blocking ``wait(file:line:)`` instead, and does not compile: write
    /// `await group.waitForAll()` there.
    public func wait() async {
        await self.waitForAll()
    }
}

extension GCDGroup: WaitTarget {
    package var waitResource: WaitReport.Resource {
        WaitReport.Resource(type: "GCDGroup", name: nil, madeAt: nil, identity: WaitRecords.identity(of: self))
    }

    /// A group has no holder: it waits for work that has entered it to leave.
    package var waitHolding: WaitHolding {
        WaitHolding(state: "waits for the work in it to leave")
    }
}
