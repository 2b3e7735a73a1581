import Dispatch

/// A ``QueueSafeValue`` that is always used with `async(performIn:)` on one queue.
///
/// ```swift
/// import Dispatch
/// import SafeValueCore
///
/// let log = QueueSafeAsyncedValue(value: [String](), queue: DispatchQueue(label: "log"))
/// let printed = CountingSemaphore()
/// log.lowestPriority.set(accessClosure: { $0.append("started") })
/// log.lowestPriority.get { result in  // on the "log" queue
///     print(result)  // success(["started"])
///     printed.signal()
/// }
/// printed.wait()  // the program waits for the callback before it ends
/// ```
///
/// > Warning: Keep the holder: commands issued through a temporary fail with
/// > ``QueueSafeValueError/valueContainerDeinited``.
public final class QueueSafeAsyncedValue<Value: Sendable>: Sendable {
    private let base: QueueSafeValue<Value>
    private let queue: DispatchQueue

    /// Creates a holder for `value` whose commands run their closures and completions on `queue`.
    ///
    /// - Parameters:
    ///   - value: The initial value.
    ///   - queue: Where every command's closures and completions run.
    ///   - file: Where the value is made, for the lock-order checker's reports.
    ///   - line: The line where the value is made.
    public init(value: Value, queue: DispatchQueue, file: StaticString = #fileID, line: UInt = #line) {
        self.base = QueueSafeValue(value: value, file: file, line: line)
        self.queue = queue
    }

    /// `async` commands that run after every pending highest-priority command.
    public var lowestPriority: QueueSafeAsyncCommand<Value> {
        self.base.async(performIn: self.queue).lowestPriority
    }

    /// `async` commands that run before every pending lowest-priority command.
    public var highestPriority: QueueSafeAsyncCommand<Value> {
        self.base.async(performIn: self.queue).highestPriority
    }
}
