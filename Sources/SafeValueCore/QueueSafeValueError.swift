/// Why a ``QueueSafeValue`` command did not run.
public enum QueueSafeValueError: Error, Equatable, Sendable {
    /// The command was issued after the value's holder was released.
    ///
    /// Schedule and command objects do not keep the holder alive: keep the ``QueueSafeValue`` itself.
    case valueContainerDeinited
    /// A `nil` closure was passed where the command needs one.
    case commandClosureDeallocated
    /// A `wait` command was issued from inside a command closure of the same value, on the thread running it.
    ///
    /// Waiting there would deadlock; the command fails at once instead.
    case reentrantWait
    /// The task issuing a `suspend` command was cancelled before the command got the value.
    case cancelled
}

/// The `done` handed to manual-completion closures.
///
/// Call it, from any thread, when the command has finished with the value. Calling it more than once has no further
/// effect.
public typealias CommandCompletionClosure = @Sendable () -> Void
