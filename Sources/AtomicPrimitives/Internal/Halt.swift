/// Stops the program with `message` on standard error, in every build: for a misuse of the package's API, or a broken
/// invariant.
///
/// The package traps through here, never through `preconditionFailure`, which prints its message only in debug
/// builds: an optimized build, as users ship it, stops with "Illegal instruction" and no word of what went wrong,
/// where the contract promises a message that names the type, the value and the rule.
///
/// - Parameters:
///   - message: What was misused and the rule it broke, naming the type and the value.
///   - file: Where the trap is, for the message; leave the default.
///   - line: Where the trap is, for the message; leave the default.
@usableFromInline
@inline(never)
package func halt(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError(message, file: file, line: line)
}

/// Stops the program with `message`, in every build, unless `condition` holds: a `precondition` whose message an
/// optimized build keeps (see ``halt(_:file:line:)``).
///
/// - Parameters:
///   - condition: What must hold.
///   - message: What was misused and the rule it broke; built only if `condition` fails.
///   - file: Where the check is, for the message; leave the default.
///   - line: Where the check is, for the message; leave the default.
@inlinable
@inline(__always)
package func guarantee(
    _ condition: Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) {
    // The message is handed over unbuilt: building it here would make every inlined check, such as the result of
    // `pthread_mutex_unlock` in `MutexLock.unlock()` off Linux, too big to be inlined into the caller.
    if !condition { halt(building: message, file: file, line: line) }
}

/// ``halt(_:file:line:)`` with a message built only now, out of line: for ``guarantee(_:_:file:line:)``.
///
/// - Parameters:
///   - message: Builds the message.
///   - file: Where the check is.
///   - line: Where the check is.
@usableFromInline
@inline(never)
package func halt(building message: () -> String, file: StaticString, line: UInt) -> Never {
    fatalError(message(), file: file, line: line)
}
