import AtomicPrimitives
import Foundation

/// The seed and size of a property test's run, from the environment.
///
/// - `CONCURRENCYKIT_CHAOS=<seed>`: the seed of the test workload. The library's schedule chaos (debug builds) reads
///   the same variable, so one seed names one run of both. Unset, a fixed default seed is used.
/// - `CONCURRENCYKIT_PROPERTY_ROUNDS=<n>`: multiplies every property test's own default number of rounds by `n`
///   (default 1, sized for `make test`); a soak sets more.
public enum PropertyRun {
    /// The seed used when `CONCURRENCYKIT_CHAOS` is not set.
    public static let defaultSeed: UInt64 = 0x00C0_FFEE

    /// The workload's seed.
    public static let seed: UInt64 = {
        guard let text = ProcessInfo.processInfo.environment["CONCURRENCYKIT_CHAOS"], !text.isEmpty else {
            return defaultSeed
        }
        if let number = UInt64(text) { return number }
        // A seed that is not a number still names one run: hash its bytes (FNV-1a).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }()

    /// The factor applied to every test's default number of rounds.
    public static let roundsFactor: Int = {
        guard let text = ProcessInfo.processInfo.environment["CONCURRENCYKIT_PROPERTY_ROUNDS"],
            let factor = Int(text), factor > 0
        else { return 1 }
        return factor
    }()

    /// A test's number of rounds: its default, times ``roundsFactor``.
    public static func rounds(_ defaultRounds: Int) -> Int { defaultRounds * roundsFactor }

    /// A generator for one test, seeded from ``seed`` and the test's own salt, so that tests do not share a stream.
    public static func random(_ salt: UInt64) -> SeededRandom {
        SeededRandom(seed: seed ^ (salt &* 0x9E37_79B9_7F4A_7C15))
    }

    /// The first line of every property failure: the rule and how to reproduce the run.
    public static func failure(_ rule: String, round: Int? = nil) -> String {
        let where_ = round.map { ", round \($0)" } ?? ""
        return "contract rule broken: \(rule) (CONCURRENCYKIT_CHAOS=\(seed)\(where_))"
    }
}

/// SplitMix64: a small, fast, seedable generator; each thread or task of a test takes its own, derived from one seed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var base: SplitMix64

    /// Creates a generator whose stream is fixed by `seed`.
    public init(seed: UInt64) { self.base = SplitMix64(seed: seed) }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        self.base.next()
    }

    /// A generator for a worker of this one: its stream depends on this one's seed and on `index` only.
    public func derived(_ index: Int) -> SeededRandom {
        var copy = self
        return SeededRandom(seed: copy.next() ^ (UInt64(index) &* 0xD1B5_4A32_D192_ED03))
    }

    /// `true` with probability `percent` / 100.
    public mutating func chance(_ percent: Int) -> Bool {
        Int.random(in: 0..<100, using: &self) < percent
    }
}
