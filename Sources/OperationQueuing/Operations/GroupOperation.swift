import Foundation

/// Operations run concurrently as one: the group finishes after all of them, and after its completion handler.
///
/// ```swift
/// import OperationQueuing
///
/// let thumbnails = GroupOperation(images.map(ThumbnailOperation.init)) { print("all thumbnails done") }
/// let publish = ConcurrentOperation { _ in publishGallery() }  // starts after the group's handler
/// queuer.addChainedOperations(thumbnails, publish) { print("gallery published") }
/// queuer.waitUntilAllOperationsAreFinished()  // the program ends after the chain and its handler
/// // Prints "all thumbnails done"
/// // Prints "gallery published"
/// ```
///
/// While its operations run, the group holds a place on its queue but no thread: it finishes from a block that
/// depends on all of them. Its ``allOperationsSucceeded`` is its ``ConcurrentOperation/success``. A group makes exactly
/// one attempt, since operations cannot run twice: its ``ConcurrentOperation/maximumRetries`` is always 1, its
/// ``ConcurrentOperation/manualRetry`` always `false` and its ``ConcurrentOperation/manualFinish`` always `true`;
/// setting another value traps with a message naming the group and the value. Cancelling the group cancels its
/// operations.
///
/// Each operation belongs to the group alone: one listed twice, or already added to a ``Queuer``, a chain or another
/// group, traps in `init` with a message that names it.
open class GroupOperation: ConcurrentOperation, @unchecked Sendable {
    /// The operations the group runs.
    public let operations: [ConcurrentOperation]
    private let completionHandler: (@Sendable () -> Void)?
    private let queue = OperationQueue()

    /// Creates a group of `operations`.
    ///
    /// - Parameters:
    ///   - operations: Run concurrently when the group starts.
    ///   - completionHandler: Runs after all of them have finished, before the group finishes.
    public init(_ operations: [ConcurrentOperation], completionHandler: (@Sendable () -> Void)? = nil) {
        var seen = Set<ObjectIdentifier>()
        for (index, operation) in operations.enumerated() {
            guarantee(
                seen.insert(ObjectIdentifier(operation)).inserted,
                "GroupOperation: the operation at index \(index) ('\(operation.name ?? "unnamed")') is listed twice; "
                    + "an operation runs once"
            )
            guarantee(
                !operation.isExecuting && !operation.isFinished,
                "GroupOperation: the operation at index \(index) ('\(operation.name ?? "unnamed")') has already "
                    + "started; an operation runs once"
            )
            operation.claim(by: Claimant(receiver: "GroupOperation", method: nil))
        }
        self.operations = operations
        self.completionHandler = completionHandler
        super.init(name: "GroupOperation")
        self.makeGroup()
    }

    /// Always 1: a group makes exactly one attempt, since its operations cannot run twice.
    ///
    /// - Precondition: A new value is 0 or 1 (0 behaves as 1); any other traps with a message naming the group and
    ///   the value.
    override open var maximumRetries: Int {
        get { super.maximumRetries }
        set { self.checkOneAttempt(newValue, allowed: 0...1, "maximumRetries") }
    }

    /// Always 1: a group makes exactly one attempt, since its operations cannot run twice.
    ///
    /// - Precondition: A new value is 1; any other traps with a message naming the group and the value.
    override open var maximumAttempts: Int {
        get { super.maximumAttempts }
        set { self.checkOneAttempt(newValue, allowed: 1...1, "maximumAttempts") }
    }

    /// Traps unless `value`, set to `property`, is in `allowed`: a group's count of attempts cannot change.
    private func checkOneAttempt(_ value: Int, allowed: ClosedRange<Int>, _ property: String) {
        guarantee(
            allowed.contains(value),
            "GroupOperation '\(self.name ?? "unnamed")': \(property) is always 1, since a group makes exactly "
                + "one attempt (its operations cannot run twice); it cannot be set to \(value)"
        )
    }

    /// Always `false`: a group makes exactly one attempt, so there is nothing to retry.
    ///
    /// - Precondition: A new value is `false`; `true` traps with a message naming the group.
    override open var manualRetry: Bool {
        get { super.manualRetry }
        set {
            guarantee(
                !newValue,
                "GroupOperation '\(self.name ?? "unnamed")': manualRetry is always false, since a group makes exactly "
                    + "one attempt; it cannot be set to true"
            )
        }
    }

    /// Always `true`: a group finishes when its operations and its completion handler have.
    ///
    /// - Precondition: A new value is `true`; `false` traps with a message naming the group.
    override open var manualFinish: Bool {
        get { super.manualFinish }
        set {
            guarantee(
                newValue,
                "GroupOperation '\(self.name ?? "unnamed")': manualFinish is always true, since a group finishes when "
                    + "its operations have; it cannot be set to false"
            )
        }
    }

    /// Cancels the group and every operation in it.
    override open func cancel() {
        super.cancel()
        for operation in self.operations { operation.cancel() }
    }

    /// Whether every operation of the group succeeded.
    ///
    /// An operation that never ran did not succeed: a group cancelled before its operations ran reports `false`.
    public var allOperationsSucceeded: Bool {
        self.operations.allSatisfy(\.success)
    }

    /// Runs the operations, then the completion handler, then finishes the group; blocks no thread.
    override open func execute() {
        let operations = self.operations
        let completionHandler = self.completionHandler
        let finished = BlockOperation { [self] in
            completionHandler?()
            self.finish(success: self.allOperationsSucceeded)
        }
        for operation in operations { finished.addDependency(operation) }
        self.queue.addOperations(operations + [finished], waitUntilFinished: false)
    }
}
