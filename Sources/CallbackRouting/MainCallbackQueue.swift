/// The two routes to the main queue, as a type of their own: a callback sent on one of them is `@MainActor`, so it
/// may touch main-actor state.
///
/// ``CallbackQueue`` is a value whose route is known only when the program runs, so its callbacks are nonisolated
/// `@Sendable` closures: one written in a `@MainActor` type cannot touch that type's state. A `MainCallbackQueue` is
/// known to run its callbacks on the main actor, so it takes `@MainActor` closures, written either way:
///
/// ```swift
/// import CallbackRouting
///
/// @MainActor final class Model {
///     var events: [Int] = []
///     var subscription: CallbackSubscription?
///     let received = CountingSemaphore()
///
///     func start(_ subject: CallbackSubject<Int, Never>) {
///         MainCallbackQueue.mainCurrentOrAsync.execute { @MainActor in self.events.append(0) }
///         subscription = subject.subscribe(on: .mainAsync) { value in
///             self.events.append(value)
///             print(self.events)
///             self.received.signal()
///         }
///     }
/// }
///
/// let model = Model()  // top-level code runs on the main actor
/// let subject = CallbackSubject<Int, Never>()
/// model.start(subject)
/// subject.send(1)
/// try await model.received.acquire()  // suspends, so the main queue runs the routed blocks
/// // Prints "[0, 1]"
/// ```
///
/// `subscribe(on: .mainAsync)` and `subscribe(on: .mainCurrentOrAsync)` pick this type, and so take `@MainActor`
/// callbacks, from any code. `.untouch`, `.dispatch(_:)` and `.operationQueue(_:)` run callbacks elsewhere and are
/// not of this type: a `@MainActor` closure given with them does not compile. The rule for every API of the package is in "Isolation" of the async guide (Docs/AsyncCode.md).
public enum MainCallbackQueue: Sendable {
    /// Always sends the block to the main queue asynchronously, as ``CallbackQueue/mainAsync`` does.
    case mainAsync
    /// Runs the block inline when called on the main queue with nothing it sent still waiting there; otherwise sends
    /// it to the main queue asynchronously, as ``CallbackQueue/mainCurrentOrAsync`` does.
    case mainCurrentOrAsync

    /// The main route `queue` names, or `nil` for a route that runs callbacks elsewhere.
    init?(_ queue: CallbackQueue) {
        switch queue {
        case .mainAsync: self = .mainAsync
        case .mainCurrentOrAsync: self = .mainCurrentOrAsync
        case .untouch, .dispatch, .operationQueue: return nil
        }
    }

    /// The same route as a ``CallbackQueue``.
    var callbackQueue: CallbackQueue {
        switch self {
        case .mainAsync: .mainAsync
        case .mainCurrentOrAsync: .mainCurrentOrAsync
        }
    }

    /// Runs `block` on the main actor, by this route.
    ///
    /// - Parameter block: The callback; it is `@MainActor`, so it may touch main-actor state.
    public func execute(_ block: @escaping @MainActor @Sendable () -> Void) {
        self.callbackQueue.execute(Self.onMainActor(block))
    }

    /// `block` as a nonisolated block, for a route that runs it on the main queue: the main actor's executor.
    ///
    /// The check cannot fail on the main routes; it is what makes running a `@MainActor` closure there sound. It
    /// costs about 50 ns on Linux (measured in a release build, 46 ns on the main thread, 60 ns after
    /// `dispatchMain()`), small next to a hop to main.
    static func onMainActor(_ block: @escaping @MainActor @Sendable () -> Void) -> @Sendable () -> Void {
        { MainActor.assumeIsolated(block) }
    }

    /// `receive` as a nonisolated callback, for a route that runs it on the main queue.
    static func onMainActor<Input: Sendable>(
        _ receive: @escaping @MainActor @Sendable (Input) -> Void
    ) -> @Sendable (Input) -> Void {
        { input in MainActor.assumeIsolated { receive(input) } }
    }
}
