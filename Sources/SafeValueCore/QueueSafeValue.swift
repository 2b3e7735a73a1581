import Dispatch

/// A value behind a priority command queue: every access is a command, and commands run one at a time.
///
/// Commands are issued as `value.{schedule}.{priority}.{command}`:
///
/// ```swift
/// import Foundation
/// import SafeValueCore
///
/// let cache = QueueSafeValue(value: [String: Data]())
///
/// // wait: block this thread until the command has run. Synchronous code only: the compiler refuses it in async
/// // code, such as this file's top level, which uses `await` below.
/// func countEntries() -> Result<Int, QueueSafeValueError> {
///     cache.wait.lowestPriority.map { $0.count }
/// }
/// print(countEntries())  // success(0)
///
/// // async(performIn:): return at once; closures and completion run on the queue.
/// cache.async(performIn: .global()).highestPriority.set(accessClosure: { $0["key"] = data }) { result in
///     print("stored: \(result)")
/// }
///
/// // suspend: await without blocking a thread.
/// let snapshot = await cache.suspend.lowestPriority.get()  // after the set: it was issued first
/// print(try snapshot.get().count)  // 1
/// ```
///
/// Every pending highest-priority command runs before any pending lowest-priority one; within one priority,
/// commands run in the order they were issued. A command's closure is a critical section: no other command of the
/// same value runs until it ends. See <doc:SchedulesAndPriorities>.
///
/// > Warning: Schedule and command objects keep neither the holder nor its value alive. Keep the `QueueSafeValue`
/// > itself: a command issued through an object whose holder is gone fails with
/// > ``QueueSafeValueError/valueContainerDeinited``.
///
/// When the holder is released, the value is destroyed as soon as no command runs on it: commands issued before
/// still run and complete, and the value dies as the last of them ends.
///
/// The holder is `Sendable` when its value is. The `async` and `suspend` schedules need a `Sendable` value, since its
/// copies cross threads.
public final class QueueSafeValue<Value> {
    @usableFromInline
    let storage: ValueStorage<Value>

    /// Creates a holder for `value`.
    ///
    /// - Parameters:
    ///   - value: The initial value.
    ///   - file: Where the value is made, for the lock-order checker's reports (see `LockOrderChecking`): a `wait`
    ///     command holds the value as a lock.
    ///   - line: The line where the value is made.
    public init(value: Value, file: StaticString = #fileID, line: UInt = #line) {
        self.storage = ValueStorage(value, file: file, line: line)
    }

    /// Creates a holder for `value` whose manual-completion commands are watched on `clock`: the package's seam for
    /// testing ``ManualCompletionDoctor`` on a clock the test moves, with no process-wide setting.
    ///
    /// - Parameters:
    ///   - value: The initial value.
    ///   - clock: The clock that measures the doctor's patience for this value's commands.
    ///   - file: Where the value is made, for the lock-order checker's reports.
    ///   - line: The line where the value is made.
    package convenience init(
        value: Value,
        completionWatchClock clock: some Clock<Duration>,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        self.init(value: value, file: file, line: line)
        self.storage.timeCompletionWatch(by: clock)
    }

    deinit {
        self.storage.holderReleased()
    }

    /// How many commands wait for the value now; for tests that need to know commands are queued.
    package var waitingCommandCount: Int {
        self.storage.engine.waitingCount
    }

    /// Debug builds: calls `observer` on a `wait` command's own thread at the moment it begins to wait for the value,
    /// with whether the command has the highest priority; in release builds it is never called.
    ///
    /// For tests of the contract's ordering rule: from that moment the command is pending, so a command issued after
    /// it, of no higher priority, must not run before it. Set it before any command is issued.
    package func observeWaitingCommands(_ observer: @escaping @Sendable (_ isHighestPriority: Bool) -> Void) {
        self.storage.engine.observeWaiting(observer)
    }

    /// Commands that block the calling thread until they have run; their closures run on the calling thread.
    @inlinable
    public var wait: QueueSafeWaitSchedule<Value> {
        QueueSafeWaitSchedule(storage: self.storage)
    }
}

extension QueueSafeValue where Value: Sendable {
    /// Commands that return at once and run their closures and completions on `queue`.
    ///
    /// > Warning: On Linux, blocks sent to `DispatchQueue.main` run only while something drains the main queue
    /// > (`dispatchMain()`, `RunLoop.main.run()`, or a top-level `await`). A command for `.main` holds the value from
    /// > the moment it is granted until its closure has run there, so with nothing draining main, every later command
    /// > of this value waits forever.
    ///
    /// A `wait` command of this value issued inside one of these commands' completions fails at once with
    /// ``QueueSafeValueError/reentrantWait``: on a serial queue it could block the queue that the command holding the
    /// value needs.
    /// - Parameter queue: Where the commands' closures and completions run.
    /// - Returns: The schedule; pick a priority on it.
    @inlinable
    public func async(performIn queue: DispatchQueue) -> QueueSafeAsyncSchedule<Value> {
        QueueSafeAsyncSchedule(storage: self.storage, queue: queue)
    }

    /// Commands that return at once and run their closures and completions on the global queue of `qos`.
    ///
    /// - Parameter qos: The quality-of-service class of the global queue to use.
    /// - Returns: The schedule; pick a priority on it.
    public func async(performIn qos: DispatchQoS.QoSClass) -> QueueSafeAsyncSchedule<Value> {
        self.async(performIn: DispatchQueue.global(qos: qos))
    }

    /// Commands for Swift concurrency: `await` them; they suspend the task, never block a thread.
    ///
    /// Their closures run inline, in the calling task, with the caller's isolation, so from a `@MainActor` type they may
    /// touch its state: see ``QueueSafeSuspendCommand``.
    @inlinable
    public var suspend: QueueSafeSuspendSchedule<Value> {
        QueueSafeSuspendSchedule(storage: self.storage)
    }
}

// Safety: all mutable state lives in `storage`, which guards it with its lock and its turn.
extension QueueSafeValue: @unchecked Sendable where Value: Sendable {}
