import Dispatch
import Foundation

/// Where a completion block runs: on the main queue, inline, on a dispatch queue or on an operation queue.
///
/// An API that takes a completion handler takes a `CallbackQueue` next to it, so that its callers decide where the
/// handler runs instead of hopping again themselves:
///
/// ```swift
/// import CallbackRouting
/// import Foundation
///
/// func load(_ url: URL, callbackQueue: CallbackQueue = .mainCurrentOrAsync,
///           completion: @escaping @Sendable (Data?) -> Void) {
///     worker.async {
///         let data = try? Data(contentsOf: url)
///         callbackQueue.execute { completion(data) }
///     }
/// }
///
/// let done = CountingSemaphore()
/// load(URL(fileURLWithPath: "/etc/hosts")) { data in  // on the main queue
///     print(data != nil)  // true
///     done.signal()
/// }
/// try await done.acquire()  // suspends, so the main queue can run the completion
/// ```
///
/// > Important: On Linux, blocks sent to the main queue run only while something drains it: `dispatchMain()`,
/// > `RunLoop.main.run()`, or an `async` `main`. A command-line program that does none of these never runs the
/// > ``mainAsync`` and ``mainCurrentOrAsync`` callbacks it hops to main.
public enum CallbackQueue: Sendable {
    /// Always sends the block to the main queue asynchronously, even when called on the main queue.
    case mainAsync
    /// Runs the block inline when called on the main queue with no earlier `mainCurrentOrAsync` block still waiting
    /// there; otherwise sends it to the main queue asynchronously.
    ///
    /// "On the main queue" is decided by a queue-specific key, not by `Thread.isMainThread`, so it is right inside
    /// `DispatchQueue.global().sync {}` called from the main thread and after `dispatchMain()`. Blocks keep their
    /// order: a call on main while blocks it sent earlier are still queued there runs after them.
    case mainCurrentOrAsync
    /// Runs the block inline, on the caller's thread.
    case untouch
    /// Always sends the block to `queue` asynchronously, even when called on that queue.
    case dispatch(DispatchQueue)
    /// Adds the block to `queue` as an operation: an `OperationQueue`, or any ``CallbackOperationQueue``.
    case operationQueue(any CallbackOperationQueue)

    /// Whether this is ``untouch``: callbacks run inline, on the calling thread.
    @inlinable
    var isUntouch: Bool {
        if case .untouch = self { return true }
        return false
    }

    /// Runs `block` on this route.
    ///
    /// - Parameter block: The callback; which thread and queue it runs on is the case's to say.
    @inlinable
    public func execute(_ block: @escaping @Sendable () -> Void) {
        // The inline route in the caller's code: a call, no switch over the other routes' payloads.
        if self.isUntouch { return block() }
        self.executeElsewhere(block)
    }

    /// Runs a `@MainActor` block on this route, which must be ``mainAsync`` or ``mainCurrentOrAsync``.
    ///
    /// Called as `queue.execute { @MainActor in … }`: a closure that says `@MainActor` takes this overload, any other
    /// takes ``execute(_:)``. A `CallbackQueue` is a value whose route is known only when the program runs, so an
    /// unannotated closure written in a `@MainActor` type is nonisolated here; to have the compiler know the route,
    /// and such a closure touch main-actor state, take a ``MainCallbackQueue`` instead. The rule for every API of the
    /// package is in "Isolation" of the async guide (Docs/AsyncCode.md).
    ///
    /// - Parameter block: The callback; it runs on the main actor.
    /// - Precondition: This is ``mainAsync`` or ``mainCurrentOrAsync``. The other routes run blocks on the caller's
    ///   thread or on a queue of their own, not on the main actor: they trap here rather than run the block there.
    public func execute(onMainActor block: @escaping @MainActor @Sendable () -> Void) {
        guard let main = MainCallbackQueue(self) else {
            halt(
                "CallbackQueue.execute: a @MainActor block was given to route \(self.routeName), which does not run "
                    + "it on the main actor; only .mainAsync and .mainCurrentOrAsync take @MainActor blocks"
            )
        }
        main.execute(block)
    }

    /// The route as written in source, for messages: `.untouch`, `.dispatch("label")`.
    var routeName: String {
        switch self {
        case .mainAsync: ".mainAsync"
        case .mainCurrentOrAsync: ".mainCurrentOrAsync"
        case .untouch: ".untouch"
        case .dispatch(let queue): ".dispatch(\"\(queue.label)\")"
        case .operationQueue: ".operationQueue"
        }
    }

    /// ``execute(_:)`` for every route but ``untouch``.
    @usableFromInline
    func executeElsewhere(_ block: @escaping @Sendable () -> Void) {
        switch self {
        case .mainAsync:
            DispatchQueue.main.async(execute: block)
            MainQueueDoctor.noteSendToMain()
        case .mainCurrentOrAsync:
            MainQueueHops.runInlineOrHop(block)
        case .untouch:
            block()
        case .dispatch(let queue):
            queue.async(execute: block)
            MainQueueDoctor.noteSend(to: queue)
        case .operationQueue(let queue):
            queue.addOperation(block)
        }
    }

    /// The dispatch queue blocks run on: main for the main routes, `queue` for ``dispatch(_:)``, the operation
    /// queue's `underlyingQueue` for ``operationQueue(_:)``, and `nil` for ``untouch``.
    public var queue: DispatchQueue? {
        switch self {
        case .mainAsync, .mainCurrentOrAsync: .main
        case .untouch: nil
        case .dispatch(let queue): queue
        case .operationQueue(let queue): queue.underlyingQueue
        }
    }

    /// Whether the caller is running on the main queue, decided the way ``mainCurrentOrAsync`` decides it.
    ///
    /// This reads a queue-specific key set on the main queue, a few nanoseconds; `Thread.isMainThread` asks the
    /// kernel on Linux and is wrong inside `DispatchQueue.global().sync {}` called from the main thread.
    public static var isOnMainQueue: Bool {
        MainQueue.isCurrent
    }
}
