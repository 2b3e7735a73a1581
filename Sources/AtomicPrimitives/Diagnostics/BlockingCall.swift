/// A public call that may block its thread, as the report of a blocking call from inside a task names it.
///
/// The public entry point makes it and hands it down to the place where its thread parks: the semaphore's wait once
/// nothing is free, the wait for a value's turn, a `sync` that is not run inline, a group's wait. Only there is it
/// reported (``BlockingCallCheck/blocking(_:_:)``), so a try-wait, or a wait for something that is free, never is.
@usableFromInline
package struct BlockingCall: Sendable {
    /// The blocking call, as users write it: `"CountingSemaphore.wait()"`.
    @usableFromInline
    package let api: StaticString
    /// What to write instead in async code: `"try await semaphore.acquire()"`.
    @usableFromInline
    package let alternative: StaticString
    /// The caller's file: the public entry point's own `#fileID` default, passed through.
    @usableFromInline
    package let file: StaticString
    /// The caller's line.
    @usableFromInline
    package let line: UInt

    /// Names the public call `api` made at `file`:`line`, and what async code uses instead.
    ///
    /// - Parameters:
    ///   - api: The blocking call, as users write it.
    ///   - alternative: What to write instead in async code.
    ///   - file: The caller's file.
    ///   - line: The caller's line.
    @inlinable
    package init(api: StaticString, alternative: StaticString, file: StaticString, line: UInt) {
        self.api = api
        self.alternative = alternative
        self.file = file
        self.line = line
    }
}
