import Dispatch
import SafeValueCore
import TestSupport

/// A serial queue that can tell whether the caller runs on it.
final class TaggedQueue: Sendable {
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<Bool>()

    init(_ label: String) {
        self.queue = DispatchQueue(label: label)
        self.queue.setSpecific(key: self.key, value: true)
    }

    var isCurrent: Bool { DispatchQueue.getSpecific(key: self.key) == true }

    /// Waits, for at most ten seconds, until every block sent to the queue so far has run.
    func drain() -> Bool {
        let drained = DispatchSemaphore(value: 0)
        self.queue.async { drained.signal() }
        return drained.wait(timeout: deadline()) == .success
    }
}

/// Holds a value with an `async` manual-completion command until `release()`: the way tests make commands wait.
final class ValueHold: Sendable {
    private let done = AtomicBox<CommandCompletionClosure?>(nil)
    private let started = DispatchSemaphore(value: 0)

    init<Value: Sendable>(_ value: QueueSafeValue<Value>, on queue: DispatchQueue) {
        value.async(performIn: queue).highestPriority.set(manualCompletion: { [done, started] _, finish in
            done.mutate { $0 = finish }
            started.signal()
        })
    }

    /// Waits until the hold has the value.
    func isHolding() -> Bool { self.started.wait(timeout: deadline()) == .success }

    func release() { self.done.value?() }
}
