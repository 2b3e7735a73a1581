/// A ``QueueSafeValue`` that is always used with the `wait` schedule.
///
/// ```swift
/// import SafeValueCore
///
/// let counter = QueueSafeSyncedValue(value: 0)
/// counter.highestPriority.set { $0 += 1 }
/// print(counter.lowestPriority.get())  // success(1)
/// ```
///
/// > Warning: Keep the holder. `QueueSafeSyncedValue(value: 1).lowestPriority.get()` on a temporary fails with
/// > ``QueueSafeValueError/valueContainerDeinited``: the holder is released before the command runs.
public final class QueueSafeSyncedValue<Value> {
    private let base: QueueSafeValue<Value>

    /// Creates a holder for `value`.
    ///
    /// - Parameters:
    ///   - value: The initial value.
    ///   - file: Where the value is made, for the lock-order checker's reports.
    ///   - line: The line where the value is made.
    public init(value: Value, file: StaticString = #fileID, line: UInt = #line) {
        self.base = QueueSafeValue(value: value, file: file, line: line)
    }

    /// `wait` commands that run after every pending highest-priority command.
    public var lowestPriority: QueueSafeWaitCommand<Value> {
        self.base.wait.lowestPriority
    }

    /// `wait` commands that run before every pending lowest-priority command.
    public var highestPriority: QueueSafeWaitCommand<Value> {
        self.base.wait.highestPriority
    }
}

// Safety: the only state is `base`, itself Sendable when `Value` is.
extension QueueSafeSyncedValue: @unchecked Sendable where Value: Sendable {}
