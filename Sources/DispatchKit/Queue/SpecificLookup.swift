import Dispatch
import Synchronization

#if canImport(CDispatch)
import CDispatch
#endif

/// The fast path of "which DispatchKit queue is the caller in": a raw `dispatch_get_specific`, without the Swift
/// overlay's generic boxing, retain and release.
///
/// The overlay stores each specific value in a box under the key object's address. The raw lookup returns that box's
/// address: nil means no DispatchKit queue, and a marker remembers the box address it was last confirmed under, so a
/// match needs no overlay call. Both facts are checked once against the overlay on a private queue; if they do not
/// hold (another Dispatch, another platform), every lookup goes through the overlay.
///
/// Markers keep a reference to the one instance, so that the hot path reads no lazily initialised global.
final class SpecificLookup: Sendable {
    /// The one instance.
    static let shared = SpecificLookup()

    /// The address the overlay stores marker ids under, if the raw lookup sees exactly what the overlay sets; else 0.
    private let keyBits: UInt
    private let globalBoxes = GlobalBoxes()

    private init() {
        #if canImport(CDispatch)
        let keyBits = UInt(bitPattern: Unmanaged.passUnretained(QueueMarker.idKey).toOpaque())
        self.keyBits = Self.isReliable(keyBits) ? keyBits : 0
        #else
        self.keyBits = 0
        #endif
    }

    #if canImport(CDispatch)
    /// `bits` as a pointer; they are an object's address, never 0.
    private static func address(_ bits: UInt) -> UnsafeRawPointer {
        UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped
    }

    /// Whether the raw lookup under `keyBits` sees exactly what the overlay sets.
    private static func isReliable(_ keyBits: UInt) -> Bool {
        let key = Self.address(keyBits)
        let probe = DispatchQueue(label: "DispatchKit.SpecificLookup.probe")
        probe.setSpecific(key: QueueMarker.idKey, value: 1)
        let (inside, overlayInside) = probe.sync {
            (dispatch_get_specific(key) != nil, DispatchQueue.getSpecific(key: QueueMarker.idKey) == 1)
        }
        let outside = probe.sync {
            DispatchQueue(label: "DispatchKit.SpecificLookup.plain").sync { dispatch_get_specific(key) == nil }
        }
        return inside && overlayInside && outside
    }
    #endif

    /// The ``QueueMarker/id`` of the innermost DispatchKit queue the caller runs in, or 0; fastest when that queue
    /// is `expected`'s.
    ///
    /// A global queue other than `expected` also gives 0: global queues are concurrent and take no barriers, so a
    /// thread inside one never needs it recorded to avoid a deadlock, and code mostly runs on them.
    func innermostID(expecting expected: QueueMarker) -> UInt {
        #if canImport(CDispatch)
        if self.keyBits != 0 {
            guard let box = dispatch_get_specific(Self.address(self.keyBits)) else { return 0 }
            let address = UInt(bitPattern: box)
            if address == expected.confirmedBoxAddress.load(ordering: .relaxed) { return expected.id }
            // Most code runs on a global queue: their boxes live for the whole process, so their addresses are kept.
            // (Not when asked about a global queue: the table does not say which global a box belongs to.)
            if !expected.isGlobal && self.globalBoxes.contains(address) { return 0 }
            let id = DispatchQueue.getSpecific(key: QueueMarker.idKey) ?? 0
            if id == expected.id {
                expected.confirmedBoxAddress.store(address, ordering: .relaxed)
            } else if GCDQueue.globalMarkers.contains(where: { $0.id == id }) {
                self.globalBoxes.insert(address)
                return 0
            }
            return id
        }
        #endif
        let id = DispatchQueue.getSpecific(key: QueueMarker.idKey) ?? 0
        return id != expected.id && GCDQueue.globalMarkers.contains(where: { $0.id == id }) ? 0 : id
    }
}

/// The overlay's box addresses of the global queues' ids, once seen: a fixed table, read without locks or retains.
private final class GlobalBoxes: Sendable {
    // Five global queues at most (four on Linux, where user-interactive is user-initiated).
    private let first = Atomic<UInt>(0)
    private let second = Atomic<UInt>(0)
    private let third = Atomic<UInt>(0)
    private let fourth = Atomic<UInt>(0)
    private let fifth = Atomic<UInt>(0)

    func contains(_ address: UInt) -> Bool {
        self.first.load(ordering: .relaxed) == address || self.second.load(ordering: .relaxed) == address
            || self.third.load(ordering: .relaxed) == address || self.fourth.load(ordering: .relaxed) == address
            || self.fifth.load(ordering: .relaxed) == address
    }

    func insert(_ address: UInt) {
        guard !self.contains(address) else { return }
        if Self.claim(self.first, address) || Self.claim(self.second, address) || Self.claim(self.third, address)
            || Self.claim(self.fourth, address)
        {
            return
        }
        _ = Self.claim(self.fifth, address)
    }

    /// Stores `address` in an empty `slot`; `true` if it did, or if the slot already holds it.
    private static func claim(_ slot: borrowing Atomic<UInt>, _ address: UInt) -> Bool {
        let exchange = slot.compareExchange(expected: 0, desired: address, ordering: .relaxed)
        return exchange.exchanged || exchange.original == address
    }
}
