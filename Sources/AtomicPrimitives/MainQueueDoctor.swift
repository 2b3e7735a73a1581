import Dispatch

/// Warns, once per process, when a block ConcurrencyKit sent to the main queue has not started because nothing
/// drains the main queue — the most common surprise of Swift on Linux.
///
/// On Linux, blocks sent to `DispatchQueue.main` run only while the program calls `dispatchMain()` or
/// `RunLoop.main.run()`, or has an `async` entry point (top-level code that uses `await`). Otherwise they wait forever,
/// silently. When a block sent through ConcurrencyKit — CallbackRouting's `mainAsync` and the hops of
/// `mainCurrentOrAsync`, DispatchKit's `GCDQueue.main`, SafeValueCore's `async(performIn: .main)` — has not started
/// after ``patience``, the doctor prints one warning to standard error that names the fix, and then keeps quiet.
///
/// It watches at most one block at a time, and stops watching for good once it has seen the main queue drained: to
/// see that, the first time it hears of a block sent to another queue, it sends main an empty block of its own. It
/// settles within moments in a program that drains the main queue, and never in one that does not. Apart from the
/// send that starts a watch, a block costs the doctor one atomic load and no lock; until it has settled, and while it
/// watches no block, also one queue-specific read of the block's queue, about ten nanoseconds more. On Apple
/// platforms, where the app's run loop drains the main queue, it is off.
///
/// ```swift
/// import AtomicPrimitives
///
/// MainQueueDoctor.patience = .seconds(5)  // a program that starts draining main late
/// MainQueueDoctor.patience = nil          // off
/// print(MainQueueDoctor.patience == nil)  // true
/// ```
public enum MainQueueDoctor {
    /// How long a block sent to the main queue may wait before the warning; `nil` switches the doctor off.
    ///
    /// Two seconds on Linux; `nil` on Apple platforms.
    /// - Precondition: A new value is `nil` or more than zero.
    public static var patience: Duration? {
        get { self.probe.patience }
        set {
            if let newValue {
                precondition(
                    newValue > .zero,
                    "MainQueueDoctor.patience must be nil or more than zero, got \(newValue)"
                )
            }
            self.probe.patience = newValue
        }
    }

    /// The watch over the real main queue; its warning goes to standard error.
    package static let probe: MainQueueProbe = {
        #if canImport(Darwin)
        let patience: Duration? = nil
        #else
        let patience: Duration? = .seconds(2)
        #endif
        return MainQueueProbe(
            target: { DispatchQueue.main },
            patience: patience,
            report: { message in CLibrary.writeLineToStandardError(message) }
        )
    }()

    /// Notes that ConcurrencyKit has just sent a block to the main queue.
    package static func noteSendToMain() {
        self.probe.noteSend()
    }

    /// Notes that ConcurrencyKit has just sent a block to `queue`, which may be the main queue.
    ///
    /// One relaxed atomic load when the doctor is off, has settled, or watches a block already. Otherwise it also
    /// reads one queue-specific value of `queue`, and starts a watch if `queue` is the main queue; the first time
    /// `queue` is another, it sends main an empty block, to see whether main is drained.
    package static func noteSend(to queue: DispatchQueue) {
        guard self.probe.isWatching else { return }
        if MainQueue.isMain(queue) {
            self.probe.noteSend()
        } else {
            self.probe.noteSendElsewhere()
        }
    }

    /// The warning, naming the wait and the fixes.
    package static func warning(after patience: Duration) -> String {
        "ConcurrencyKit: a block sent to the main queue has not started after \(patience): nothing drains the main "
            + "queue. On Linux, end main.swift with dispatchMain() or RunLoop.main.run(), or give the program an "
            + "async entry point (a top-level await). Set MainQueueDoctor.patience = nil to silence this warning."
    }
}
