import Dispatch
import Foundation

/// Anything that runs a block as an operation: what ``CallbackQueue/operationQueue(_:)`` takes.
///
/// Foundation's `OperationQueue` conforms, so `.operationQueue(OperationQueue())` works as it always did; so can a
/// type of your own, as with Kingfisher's `CallbackOperationQueue`:
///
/// ```swift
/// import CallbackRouting
/// import Foundation
///
/// final class CountingQueue: CallbackOperationQueue, @unchecked Sendable {  // Safety: `added` is an AtomicBox.
///     let base = OperationQueue()
///     let added = AtomicBox(0)
///
///     func addOperation(_ block: @escaping @Sendable () -> Void) {
///         self.added.mutate { $0 += 1 }
///         self.base.addOperation(block)
///     }
/// }
///
/// let queue = CountingQueue()
/// CallbackQueue.operationQueue(queue).execute { print("ran") }
/// queue.base.waitUntilAllOperationsAreFinished()
/// // Prints "ran"
/// print(queue.added.value)  // 1
/// ```
public protocol CallbackOperationQueue: AnyObject, Sendable {
    /// Runs `block` as an operation of this queue.
    ///
    /// - Parameter block: The callback.
    func addOperation(_ block: @escaping @Sendable () -> Void)

    /// The dispatch queue the operations run on, if there is one; ``CallbackQueue/queue`` reports it.
    var underlyingQueue: DispatchQueue? { get }
}

extension CallbackOperationQueue {
    /// No dispatch queue is known: the default for types that do not say.
    public var underlyingQueue: DispatchQueue? { nil }
}

extension OperationQueue: CallbackOperationQueue {}
