/// Why a ``QueueSafeValue`` command did not run.
public enum QueueSafeValueError: Error, Equatable, Sendable {
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
}

/// The `done` handed to manual-completion closures.
///
/// Call it, from any thread, when the command has finished with the value. Calling it more than once has no further
/// effect.
public typealias CommandCompletionClosure = @Sendable () -> Void
