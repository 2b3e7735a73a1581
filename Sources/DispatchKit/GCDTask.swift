import AtomicPrimitives

/// A block bound to a queue, which can be run, cancelled, and chained to the blocks that follow it: Eki's `Task`.
///
/// Named `GCDTask` so that it never shadows Swift's `Task`.
///
/// ```swift
/// import DispatchKit
///
/// let shown = CountingSemaphore()
/// let download = GCDQueue.utility + { print("fetch") }
/// download <> { print("parse on utility") } <> GCDTask(queue: .main) { print("show on main"); shown.signal() }
/// download.async()
/// try await shown.acquire()  // suspends, so the main queue can run the last task
/// // Prints "fetch"
/// // Prints "parse on utility"
/// // Prints "show on main"
/// ```
///
/// A chained task starts after the one before it has finished, on its own queue; a bare chained block runs on the
/// queue of the task it is chained to. A task cancelled before it runs skips its block, and the tasks chained to
/// it still start after it, as a cancelled `DispatchWorkItem`'s notifications do.
public final class GCDTask: Sendable {
    private struct State {
        var isCancelled = false
        var hasFinished = false
        var followers: [GCDTask] = []
    }

    /// The queue the task's block runs on.
    public let queue: GCDQueue
    private let block: @Sendable () -> Void
    private let state = AtomicBox(State())

    /// Creates a task that runs `block` on `queue` when started.
    ///
    /// - Parameters:
    ///   - queue: Where the block runs; the background queue unless you say otherwise.
    ///   - block: The work.
    public init(queue: GCDQueue = .background, _ block: @escaping @Sendable () -> Void) {
        self.queue = queue
        self.block = block
    }

    /// Runs the task asynchronously on its queue.
    ///
    /// - Returns: This task.
    @discardableResult
    public func async() -> GCDTask {
        self.queue.async { self.run() }
        return self
    }

    /// Runs the task on its queue and waits until it has finished.
    ///
    /// Called from inside the task's queue, it runs inline instead of deadlocking, as ``GCDQueue/sync(file:line:_:)`` does.
    public func sync() {
        self.queue.sync { self.run() }
    }

    /// Keeps the block from running if it has not started yet; tasks chained to this one still start after it.
    public func cancel() {
        self.state.mutate { $0.isCancelled = true }
    }

    /// Whether ``cancel()`` has been called.
    public var isCancelled: Bool {
        self.state.value.isCancelled
    }

    /// Chains `block` to run after this task, on this task's queue.
    ///
    /// - Parameter block: The work that follows.
    /// - Returns: The new task, so that chains read in order: `task <> a <> b`.
    @discardableResult
    public func chain(_ block: @escaping @Sendable () -> Void) -> GCDTask {
        self.chain(GCDTask(queue: self.queue, block))
    }

    /// Chains `task` to start after this task has finished; it runs on its own queue.
    ///
    /// Chained to a task that has already finished, it starts at once.
    /// - Parameter task: The task that follows.
    /// - Returns: `task`, so that chains read in order.
    @discardableResult
    public func chain(_ task: GCDTask) -> GCDTask {
        let startNow = self.state.mutate { state -> Bool in
            if state.hasFinished { return true }
            state.followers.append(task)
            return false
        }
        if startNow { task.async() }
        return task
    }

    private func run() {
        if !self.isCancelled { self.block() }
        let followers = self.state.mutate { state -> [GCDTask] in
            guard !state.hasFinished else { return [] }
            state.hasFinished = true
            defer { state.followers = [] }
            return state.followers
        }
        for follower in followers { follower.async() }
    }
}
