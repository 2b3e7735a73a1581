import AtomicPrimitives
import TestSupport
import Testing

/// A type as users write it: state in `@Locked` properties, `@unchecked Sendable` on that basis.
private final class Stats: @unchecked Sendable {  // Safety: every stored var is @Locked.
    @Locked var requests = 0
    @Locked var names: [String] = []
}

@Suite("Locked", .timeLimit(.minutes(1)))
struct LockedTests {
    @Test("reads go through the box and writes through $name.mutate")
    func readAndMutate() {
        let stats = Stats()
        stats.$names.mutate { $0.append("first") }
        #expect(stats.names == ["first"])
        #expect(stats.$names.value == ["first"])
    }

    @Test("$name.mutate loses no update across threads")
    func noLostUpdates() async throws {
        try await offPoolTest { checks in
            let stats = Stats()
            let perThread = 10_000
            let finished = runOnThreads(contendingThreads) { _ in
                for _ in 0..<perThread {
                    stats.$requests.mutate { $0 += 1 }
                }
            }
            checks.expect(finished)
            checks.expect(stats.requests == contendingThreads * perThread)
        }
    }

    @Test("copies of the wrapper share one box")
    func copiesShareTheBox() {
        let original = Locked(wrappedValue: 1)
        let copy = original
        copy.projectedValue.mutate { $0 = 2 }
        #expect(original.wrappedValue == 2)
    }
}
