import AtomicPrimitives
import Dispatch
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The calling thread as the C library names it: what the wait records store and compare holders with.
private func pthreadSelf() -> UInt {
    #if canImport(Glibc)
    UInt(pthread_self())
    #else
    UInt(bitPattern: pthread_self())
    #endif
}

@Suite("Thread identity and packed sites", .timeLimit(.minutes(1)))
struct ThreadIdentityTests {
    @Test("currentThreadID() is pthread_self() on every thread, and differs between live threads")
    func threadIDIsPthreadSelf() {
        #expect(currentThreadID() == pthreadSelf())
        let ids = AtomicBox<[UInt]>([])
        let mismatches = AtomicBox(0)
        let arrived = DispatchSemaphore(value: 0)
        let leave = DispatchSemaphore(value: 0)
        let threads = DispatchGroup()
        for _ in 0..<8 {
            threads.enter()
            Thread {
                if currentThreadID() != pthreadSelf() { mismatches.mutate { $0 += 1 } }
                ids.mutate { $0.append(currentThreadID()) }
                arrived.signal()
                // All eight stay alive until each has read its ID, so that none can reuse another's.
                _ = leave.wait(timeout: deadline())
                threads.leave()
            }.start()
        }
        for _ in 0..<8 { #expect(arrived.wait(timeout: deadline()) == .success) }
        for _ in 0..<8 { leave.signal() }
        #expect(threads.wait(timeout: deadline()) == .success)
        #expect(mismatches.value == 0)
        #expect(Set(ids.value).count == 8 && !ids.value.contains(0))
    }

    @Test("in a task, every read after an await names the thread the task runs on then")
    func threadIDAfterAwaits() async {
        var mismatches = 0
        for _ in 0..<2_000 {
            await Task.yield()
            if currentThreadID() != pthreadSelf() { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }

    @Test("a packed site gives back its file and line; a line past 65,535 keeps the file alone; none is nil")
    func packedSites() {
        let line: UInt = #line
        let site = PackedSite.pack(file: #fileID, line: line)
        #expect(PackedSite.describe(site) == "AtomicPrimitivesTests/ThreadIdentityTests.swift:\(line)")
        #expect(PackedSite.line(of: site) == line)
        let far = PackedSite.pack(file: #fileID, line: 70_000)
        #expect(PackedSite.describe(far) == "AtomicPrimitivesTests/ThreadIdentityTests.swift")
        #expect(PackedSite.describe(PackedSite.none) == nil && PackedSite.file(of: PackedSite.none) == nil)
    }

    #if os(Linux)
    @Test("the processors counted for spinning are those the process may run on (its affinity mask), not all online")
    func usableProcessorsFollowTheAffinityMask() throws {
        // The kernel's own account of the mask, e.g. "0-3,8": what `taskset` or a container's cpuset leaves.
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        let allowed = line.dropFirst("Cpus_allowed_list:".count).split(separator: ",").reduce(0) { total, range in
            let bounds = range.trimmingCharacters(in: .whitespaces).split(separator: "-").compactMap { Int($0) }
            return total + (bounds.count == 2 ? bounds[1] - bounds[0] + 1 : 1)
        }
        #expect(usableProcessorCount() == allowed)
        #expect(ParkedThread.watcherLimit == allowed - 1)
    }
    #endif
}
