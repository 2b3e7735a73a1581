import Dispatch

/// Tells whether the calling code runs on the main dispatch queue, by a queue-specific key set on it.
///
/// Not `Thread.isMainThread`: inside `DispatchQueue.global().sync {}` called from the main thread the code runs on the
/// main thread but not on the main queue, and after `dispatchMain()` main-queue blocks run on a worker thread. Not
/// `===` either: on Linux `DispatchQueue.main` is a new object on every access. Shared by DispatchKit and
/// CallbackRouting.
package enum MainQueue {
    /// Set on the main queue by the first reader, through the thread-safe lazy initializer.
    private static let key: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Whether the caller is running on the main queue (or on a queue that targets it).
    package static var isCurrent: Bool {
        DispatchQueue.getSpecific(key: self.key) == true
    }

    /// Whether `queue` is the main queue itself, by the key set on it (not by a queue that targets main).
    package static func isMain(_ queue: DispatchQueue) -> Bool {
        queue.getSpecific(key: self.key) == true
    }
}
