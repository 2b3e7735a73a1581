#if DEBUG
import Synchronization

/// The one word every observed lock reads in a debug build: which of the diagnostics are on.
///
/// Bit 0: the lock-order checker (mode `warn` or `trap`). Bit 1: schedule chaos (a seed is set). With both off, an
/// acquisition costs this one relaxed load and a branch. The bits above count the times the checker was switched
/// on: a thread's records of held locks from before are stale, since releases are not recorded while it is off.
@usableFromInline
enum DiagnosticSwitches {
    // The bits are written as literals on the per-acquisition path: a `static let` costs a lazy-initialization
    // check per use in an unoptimized build.

    /// The lock-order checker's bit.
    static let lockOrder: UInt64 = 1
    /// Schedule chaos's bit.
    static let chaos: UInt64 = 2
    /// One switching-on of the checker, in the epoch bits.
    static let epochUnit: UInt64 = 4

    @usableFromInline
    static let flags = Atomic<UInt64>(
        (LockOrderChecking.storedMode == .off ? 0 : 1) | (ScheduleChaos.environmentSeed == nil ? 0 : 2)
    )

    /// Switches `bit` on or off.
    static func set(_ bit: UInt64, _ isOn: Bool) {
        var current = self.flags.load(ordering: .relaxed)
        while true {
            var next = isOn ? current | bit : current & ~bit
            if bit == self.lockOrder && isOn && current & bit == 0 { next &+= self.epochUnit }
            let (exchanged, original) = self.flags.compareExchange(
                expected: current,
                desired: next,
                ordering: .relaxed
            )
            if exchanged { return }
            current = original
        }
    }
}
#endif
