import AtomicPrimitives
import Dispatch
import Foundation

/// Counts the deinits of the ``LifetimeProbe/Tracked`` objects it made: for checking that no object outlives its
/// last user.
public final class LifetimeProbe: Sendable {
    /// An object whose deinit the probe counts; put it inside a value, a closure or a handler under test.
    public final class Tracked: Sendable {
        private let probe: LifetimeProbe
        /// Which object this is.
        public let index: Int

        fileprivate init(probe: LifetimeProbe, index: Int) {
            self.probe = probe
            self.index = index
        }

        deinit { self.probe.deinits.mutate { $0 += 1 } }
    }

    private let made = AtomicBox(0)
    private let deinits = AtomicBox(0)

    /// Creates a probe that has made nothing yet.
    public init() {}

    /// Makes one tracked object.
    public func make() -> Tracked {
        Tracked(
            probe: self,
            index: self.made.mutate { count in
                count += 1
                return count
            }
        )
    }

    /// How many tracked objects are still alive.
    public var alive: Int { self.made.value - self.deinits.value }

    /// Waits, for at most `milliseconds` (by default ``patienceSeconds``), until every tracked object has been destroyed.
    ///
    /// - Returns: `false` if some were still alive at the deadline.
    public func allReleased(within milliseconds: Int = patienceSeconds * 1_000) -> Bool {
        let limit = DispatchTime.now() + .milliseconds(milliseconds)
        while self.alive > 0 {
            if DispatchTime.now() > limit { return false }
            Thread.sleep(forTimeInterval: 0.000_5)
        }
        return true
    }
}

/// A weak reference, to see whether an object of the package has been destroyed.
public struct WeakReference<Object: AnyObject>: @unchecked Sendable {
    // Safety: `object` is written once, at init; reading a weak reference is thread-safe.
    private weak var referent: Object?

    /// Refers to `object` without keeping it alive.
    public init(_ object: Object) { self.referent = object }

    /// The object, if it still exists.
    public var object: Object? { self.referent }

    /// Whether the object has been destroyed.
    public var isReleased: Bool { self.referent == nil }

    /// Waits, for at most `milliseconds` (by default ``patienceSeconds``), until the object has been destroyed.
    ///
    /// - Returns: `false` if it was still alive at the deadline.
    public func released(within milliseconds: Int = patienceSeconds * 1_000) -> Bool {
        let limit = DispatchTime.now() + .milliseconds(milliseconds)
        while !self.isReleased {
            if DispatchTime.now() > limit { return false }
            Thread.sleep(forTimeInterval: 0.000_5)
        }
        return true
    }
}
