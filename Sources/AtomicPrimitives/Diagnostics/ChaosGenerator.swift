/// The random choices of ``ScheduleChaos`` for one thread: SplitMix64 seeded from the seed and the thread's number.
struct ChaosGenerator {
    private var random: SplitMix64

    init(seed: UInt64, threadOrdinal: UInt64) {
        self.random = SplitMix64(seed: seed ^ (threadOrdinal &+ 1) &* 0xD1B5_4A32_D192_ED03)
    }

    /// The next choice: mostly carry on, sometimes yield, now and then pause for 1 to 20 microseconds.
    mutating func nextDecision() -> ScheduleChaos.Decision {
        let random = self.random.next()
        switch random % 100 {
        case 0..<70: return .proceed
        case 70..<88: return .yield
        default: return .pause(microseconds: UInt32(1 + (random >> 32) % 20))
        }
    }
}
