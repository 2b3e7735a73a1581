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

    @Test("in a task, every read after an await names the thread the task runs on then, in release builds too")
    func threadIDAfterAwaits() async {
        // An actor whose executor's two threads take turns moves to the other thread at every `Task.yield()`. Both
        // reads of the thread (`%fs:0x10` on x86-64 glibc; the out-of-line call that every other platform uses) must
        // name the thread it runs on then. A value reused from before the await, as an optimized build does with a
        // direct `pthread_self()` (glibc declares it `const`), names the thread before. `make test` runs this suite
        // in a release build too (the `release` stage), where only that can happen.
        let hopper = ThreadHopper()
        let stale = await hopper.readsAfterMoves(1_000)
        #expect(hopper.executor.shutDown())
        #expect(stale == 0, "\(stale) of 1,000 reads after a move named the thread before it")
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
        // The kernel's own account of the main thread's mask, e.g. "0-3,8": what `taskset` or a cpuset leaves. The
        // mask may name CPUs that are not online (a VM's hot-pluggable ones), which the affinity call leaves out.
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        let mask = try #require(cpuList(line.dropFirst("Cpus_allowed_list:".count)), "\(line)")
        let onlineList = try String(contentsOfFile: "/sys/devices/system/cpu/online", encoding: .utf8)
        let online = try #require(cpuList(Substring(onlineList)), "\(onlineList)")
        let allowed = mask.intersection(online).count
        #expect(allowed > 0 && usableProcessorCount() == allowed)
        #expect(ParkedThread.watcherLimit == allowed - 1)
    }

    /// The CPUs of a kernel CPU list such as "0-3,8"; `nil` if a part is not a number or a range.
    private func cpuList(_ text: Substring) -> Set<Int>? {
        var cpus = Set<Int>()
        for part in text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",") {
            let bounds = part.split(separator: "-").map { Int($0) }
            guard (1...2).contains(bounds.count), let low = bounds.first ?? nil, let high = bounds.last ?? nil,
                low <= high
            else { return nil }
            cpus.formUnion(low...high)
        }
        return cpus
    }

    @Test("a process held to one CPU counts one processor, however many are online")
    func oneAllowedProcessorCountsOne() async {
        // In a process of its own, whose main thread it pins to the CPU this thread runs on (one the process may use,
        // also in a container whose cpuset leaves CPU 0 out), as `taskset -c N` would.
        await #expect(processExitsWith: .success) {
            // Glibc declares these only for _GNU_SOURCE, which Swift's Glibc module does not set.
            typealias GetCPU = @convention(c) () -> Int32
            typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
            guard let getCPU = dlsym(nil, "sched_getcpu"), let setAffinity = dlsym(nil, "sched_setaffinity") else {
                fatalError("no sched_getcpu or sched_setaffinity")
            }
            let cpu = Int(unsafeBitCast(getCPU, to: GetCPU.self)())
            precondition(cpu >= 0, "sched_getcpu gave \(cpu)")
            // A CPU mask holding that CPU, at least a cpu_set_t long.
            var cpus = [UInt](repeating: 0, count: (max(1024, cpu + 1) + UInt.bitWidth - 1) / UInt.bitWidth)
            cpus[cpu / UInt.bitWidth] = 1 << (cpu % UInt.bitWidth)
            let size = cpus.count * MemoryLayout<UInt>.size
            let pinned = unsafeBitCast(setAffinity, to: SetAffinity.self)(getpid(), size, cpus)
            precondition(pinned == 0, "sched_setaffinity failed")
            precondition(usableProcessorCount() == 1, "counted \(usableProcessorCount()) processors on one CPU")
        }
    }
    #endif
}

/// An actor on an ``AlternatingThreadsExecutor``: it runs on the other thread after every suspension.
private actor ThreadHopper {
    let executor = AlternatingThreadsExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor { self.executor.asUnownedSerialExecutor() }

    /// Yields `count` times, and counts the reads of the thread after a yield that name the thread before it, or
    /// disagree with each other.
    func readsAfterMoves(_ count: Int) async -> Int {
        var stale = 0
        var before = (currentThreadID(), threadIDFromOutOfLineCall())
        for _ in 0..<count {
            await Task.yield()
            let now = (currentThreadID(), threadIDFromOutOfLineCall())
            if now.0 == before.0 || now.1 == before.1 || now.0 != now.1 { stale += 1 }
            before = now
        }
        return stale
    }
}
