/// Why a ``QueueSafeValue`` command did not run.
///
/// Printed, an error names what happened and the rule it broke: `print(error)` says more than the case's name.
public enum QueueSafeValueError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The command was issued after the value's holder was released.
    ///
    /// Schedule and command objects keep neither the holder nor its value alive: keep the ``QueueSafeValue`` itself.
    case valueContainerDeinited
    /// A `nil` closure was passed where the command needs one.
    case commandClosureDeallocated
    /// A `wait` command was issued, on the thread running it, from inside a command closure of the same value or
    /// from inside one of its `async` commands' completions.
    ///
    /// Waiting there would deadlock: inside a closure the value is held; inside a completion its queue is, and on a
    /// serial queue the command holding the value, or one ahead of the `wait`, may need that queue to run. The command
    /// fails at once instead. From a completion, issue an `async` or `suspend` command, or hop to another queue first.
    case reentrantWait
    /// The task issuing a `suspend` command was cancelled before the command got the value.
    case cancelled

    /// What happened, and the rule it broke.
    public var description: String {
        switch self {
        case .valueContainerDeinited:
            "QueueSafeValueError.valueContainerDeinited: the command was issued after its QueueSafeValue was "
                + "released; schedule and command objects keep neither the holder nor its value alive, so keep the "
                + "QueueSafeValue itself"
        case .commandClosureDeallocated:
            "QueueSafeValueError.commandClosureDeallocated: a nil closure was passed where the command needs one"
        case .reentrantWait:
            "QueueSafeValueError.reentrantWait: a wait command was issued from inside a command closure (or an async "
                + "command's completion) of the same value, which would deadlock; use the closure's inout value, or "
                + "issue an async or suspend command instead"
        case .cancelled:
            "QueueSafeValueError.cancelled: the task issuing a suspend command was cancelled before the command got "
                + "the value"
        }
    }
}

/// The `done` handed to manual-completion closures.
///
/// Call it, from any thread, when the command has finished with the value. Calling it more than once has no further
/// effect.
public typealias CommandCompletionClosure = @Sendable () -> Void
