import Dispatch

#if canImport(CDispatch)
import CDispatch
#endif

/// "Which DispatchKit queue does Dispatch say the caller runs in", as a marker id: `getSpecific` on
/// ``QueueMarker/key``, without the Swift overlay's generic call, retain and release.
///
/// The overlay keeps a specific value in a box object, a class whose one stored property follows the object header.
/// A raw `dispatch_get_specific` returns that box's address, nil for no DispatchKit queue; the marker's address, its
/// ``QueueMarker/id``, is the box's first stored word. That layout is checked once, against the overlay, on a
/// private queue; if it does not hold (another Dispatch, another platform), every lookup goes through the overlay.
///
/// Markers keep a reference to the one instance, so that the hot path reads no lazily initialised global.
final class SpecificLookup: Sendable {
    /// The one instance.
    static let shared = SpecificLookup()

    /// The address of ``QueueMarker/key``, if the raw lookup reads markers as described; else 0.
    private let rawKey: UInt

    /// Where the box keeps its value: after the object header of two words.
    private static var valueOffset: Int { 2 * MemoryLayout<UInt>.size }

    private init() {
        #if canImport(CDispatch)
        self.rawKey =
            Self.readsBoxesDirectly() ? UInt(bitPattern: Unmanaged.passUnretained(QueueMarker.key).toOpaque()) : 0
        #else
        self.rawKey = 0
        #endif
    }

    /// The ``QueueMarker/id`` of the innermost DispatchKit queue Dispatch reports for the caller, or 0.
    ///
    /// Inside a raw queue that targets a DispatchKit queue, that queue; every raw queue targets a global queue.
    var innermostID: UInt {
        #if canImport(CDispatch)
        if self.rawKey != 0 {
            let box = dispatch_get_specific(UnsafeRawPointer(bitPattern: self.rawKey).unsafelyUnwrapped)
            return box?.load(fromByteOffset: Self.valueOffset, as: UInt.self) ?? 0
        }
        #endif
        return DispatchQueue.getSpecific(key: QueueMarker.key)?.id ?? 0
    }

    #if canImport(CDispatch)
    /// Whether a raw lookup finds, at ``valueOffset`` of the box, the address of the object the overlay set.
    private static func readsBoxesDirectly() -> Bool {
        final class Probe: Sendable {}
        let key = DispatchSpecificKey<Probe>()
        let probe = Probe()
        let queue = DispatchQueue(label: "DispatchKit.SpecificLookup.probe")
        queue.setSpecific(key: key, value: probe)
        return queue.sync {
            let box = dispatch_get_specific(Unmanaged.passUnretained(key).toOpaque())
            let read = box?.load(fromByteOffset: Self.valueOffset, as: UInt.self)
            return read == UInt(bitPattern: ObjectIdentifier(probe)) && DispatchQueue.getSpecific(key: key) === probe
        }
    }
    #endif
}
