import Foundation

/// The slots of ``offPool(_:)``: how many off-pool bodies may run at once; the others suspend, first come first served.
///
/// An actor, not a semaphore of the package, so that the test harness adds no lock, report or chaos point of its own.
public actor OffPoolSlots {
    /// How many bodies run at once: two per core.
    public static let count = 2 * max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// The one set of slots of the process.
    public static let shared = OffPoolSlots()

    private var free = OffPoolSlots.count
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Takes a slot, suspending until one is free.
    public func take() async {
        if self.free > 0 {
            self.free -= 1
            return
        }
        await withCheckedContinuation { self.waiting.append($0) }
    }

    /// Gives a slot back, to the first in line if any.
    public func give() {
        if self.waiting.isEmpty {
            self.free += 1
        } else {
            self.waiting.removeFirst().resume()
        }
    }
}
