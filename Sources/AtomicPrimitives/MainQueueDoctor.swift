import Dispatch

/// Warns, once per process, when a block ConcurrencyKit sent to the main queue has not started because nothing
/// drains the main queue — the most common surprise of Swift on Linux.
///
/// On Linux, blocks sent to `DispatchQueue.main` run only while the program calls `dispatchMain()` or
/// `RunLoop.main.run()`, or has an `async` entry point (top-level code that uses `await`). Otherwise they wait forever,
/// silently. They also wait while the code running on the main queue is blocked, whatever drains it: top-level code
/// or a main-actor task that blocks in a synchronous wait lets no main-queue block run until the wait returns, and
/// none ever, if the wait is for such a block. When a block sent through ConcurrencyKit — CallbackRouting's
/// `mainAsync` and the hops of `mainCurrentOrAsync`, DispatchKit's `GCDQueue.main`, SafeValueCore's
/// `async(performIn: .main)` — has not started after ``patience``, the doctor prints one warning to standard error
/// that names the fix, and then keeps quiet. If the main queue is blocked in one of ConcurrencyKit's blocking calls
/// when the warning is due — a semaphore's, a group's or a `Queuer`'s wait, a `wait` command, a `GCDQueue` `sync` —
/// the warning names the call, its site and its async form. That holds only until the doctor has settled (below): a
/// program that has drained the main queue once and blocks it later gets no warning.
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
                guarantee(
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

    /// Runs `wait`, the blocking part of the package's public call `api`, noting it for the warning while it blocks
    /// the main queue.
    ///
    /// One relaxed atomic load when the doctor is off or has settled; otherwise also one queue-specific read of the
    /// caller's queue, and, on the main queue, two notes around `wait`.
    /// - Parameters:
    ///   - api: The blocking call, as users write it: `"GCDGroup.wait()"`.
    ///   - alternative: What to write instead in async code: `"await group.waitForAll()"`.
    ///   - file: The caller's file.
    ///   - line: The caller's line.
    ///   - wait: The blocking part of the call.
    /// - Returns: What `wait` returns.
    @usableFromInline
    package static func whileBlocking<Result>(
        api: StaticString,
        alternative: StaticString,
        file: StaticString,
        line: UInt,
        _ wait: () -> Result
    ) -> Result {
        guard self.probe.mayReport, MainQueue.isCurrent else { return wait() }
        let call = MainQueueProbe.BlockedCall(
            api: api,
            alternative: alternative,
            file: file,
            line: line,
            isInsideTask: BlockingCallCheck.isInsideTask
        )
        let outer = self.probe.noteBlocked(in: call)
        defer { self.probe.noteBlocked(in: outer) }
        return wait()
    }

    /// The warning, naming the reason the block waits and the fixes: the blocking call of the package the main queue
    /// is in, if it is in one.
    package static func warning(after patience: Duration, blockedIn call: MainQueueProbe.BlockedCall?) -> String {
        let silence = " Set MainQueueDoctor.patience = nil to silence this warning."
        let stuck = "ConcurrencyKit: a block sent to the main queue has not started after \(patience): "
        guard let call else {
            return stuck
                + "nothing drains the main queue, or the code running on it is blocked or busy. On Linux, the main "
                + "queue runs blocks only while the program calls dispatchMain() or RunLoop.main.run(), or has an "
                + "async entry point (a top-level await): end main.swift with one of them. A program that has one "
                + "still runs no main-queue block while its top-level code or a main-actor task waits in a "
                + "synchronous call (a semaphore's or a group's wait, a sync onto another queue) or computes: await "
                + "an async form of the wait instead." + silence
        }
        let blocked =
            "the main queue is blocked in \(call.api), called at \(call.file):\(call.line). No "
            + "main-queue block runs until that call returns, and if it waits for one, it never returns."
        let fix =
            call.isInsideTask
            ? " The call runs in async code: use \(call.alternative) instead, which suspends and lets the main queue "
                + "run."
            : " Make the caller async (a top-level await gives main.swift an async entry point) and use "
                + "\(call.alternative) instead, which suspends and lets the main queue run."
        return stuck + blocked + fix + silence
    }
}
