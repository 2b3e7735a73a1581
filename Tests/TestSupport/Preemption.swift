import Foundation

/// How often the kernel has taken the calling thread off its CPU against its will (Linux'
/// `nonvoluntary_ctxt_switches`), or `nil` where that is not known.
///
/// Lets a test tell that a thread ran a short stretch of code without being preempted: read it before and after;
/// equal counts mean the thread kept its CPU in between (it may still have slept voluntarily, in a system call).
public func involuntarySwitches() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("nonvoluntary_ctxt_switches:") {
        return Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
    }
    return nil
}
