/// The random choices of ``ScheduleChaos`` for one thread: SplitMix64 seeded from the seed and the thread's number.
struct ChaosGenerator {
    private var state: UInt64

    init(seed: UInt64, threadOrdinal: UInt64) {
        self.state = seed ^ (threadOrdinal &+ 1) &* 0xD1B5_4A32_D192_ED03
    }

    /// The next choice: mostly carry on, sometimes yield, now and then pause for 1 to 20 microseconds.
    mutating func nextDecision() -> ScheduleChaos.Decision {
        let random = self.next()
        switch random % 100 {
        case 0..<70: return .proceed
        case 70..<88: return .yield
        default: return .pause(microseconds: UInt32(1 + (random >> 32) % 20))
        }
    }

    private mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = self.state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
