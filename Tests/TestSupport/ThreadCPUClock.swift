import Foundation

/// The CPU time one thread has used, readable from any thread: for a test that must know a thread has *run* a
/// stretch of code, not merely that wall-clock time has passed (under load a thread can wait a long time for a CPU).
///
/// Linux' per-thread CPU clocks (`pthread_getcpuclockid`) are exact when read from another thread, also while the
/// thread runs: the kernel brings a running thread's time up to date on every read.
public struct ThreadCPUClock: Sendable {
    private let clock: clockid_t

    /// The calling thread's clock, or `nil` where there is none.
    public static func current() -> ThreadCPUClock? {
        var clock = clockid_t()
        guard pthread_getcpuclockid(pthread_self(), &clock) == 0 else { return nil }
        return ThreadCPUClock(clock: clock)
    }

    /// The CPU time the thread has used so far, in nanoseconds; read it only while the thread exists.
    public var nanoseconds: UInt64? {
        var time = timespec()
        guard clock_gettime(self.clock, &time) == 0 else { return nil }
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
