/// SplitMix64: a small, fast, seedable random number generator, the package's one.
///
/// Schedule chaos draws its decisions from it, and the tests their random work, so that a seed replays a run.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator whose stream is fixed by `seed`.
    package init(seed: UInt64) {
        self.state = seed
    }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = self.state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
