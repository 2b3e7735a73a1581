import Dispatch
import SafeValueCore
import TestSupport

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
