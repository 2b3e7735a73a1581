// The lock-order checker's cost in a debug build, as a consumer's debug build pays it: a `MutexLock` kept in a
// property, locked and unlocked by a function of this package, with the checker off and then on, alternating in one
// process. Run it with `make checker-cost` (a debug build; the checker is compiled out of release builds).
//
// Usage: DebugCheckerCost [--check]   (--check exits 1 if the checker adds more than 50 ns to a lock/unlock pair)

import AtomicPrimitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

final class Account {
    let lock = MutexLock(name: "account")
    let outer = MutexLock(name: "ledger")
    var balance = 0
}

@inline(never)
func deposit(_ account: Account) {
    account.lock.lock()
    account.balance += 1
    account.lock.unlock()
}

/// The calling thread's CPU time, so that time spent waiting for a core is not counted.
func threadCPUNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Nanoseconds per lock/unlock pair over one round, with `account.outer` held if `nested`.
///
/// The outer lock is taken after the mode is set: switching the checker on forgets what the thread held before.
func round(_ account: Account, mode: LockOrderChecking.Mode, nested: Bool, pairs: Int) -> Double {
    LockOrderChecking.mode = mode
    if nested { account.outer.lock() }
    defer { if nested { account.outer.unlock() } }
    let start = threadCPUNanoseconds()
    for _ in 0..<pairs { deposit(account) }
    return Double(threadCPUNanoseconds() - start) / Double(pairs)
}

func median(_ values: [Double]) -> Double {
    values.sorted()[values.count / 2]
}

let check = CommandLine.arguments.contains("--check")
let limit = 50.0
let pairs = 200_000
let rounds = 15
var worst = 0.0
for nested in [false, true] {
    let account = Account()
    var off: [Double] = []
    var on: [Double] = []
    for _ in 0..<rounds {
        off.append(round(account, mode: .off, nested: nested, pairs: pairs))
        on.append(round(account, mode: .warn, nested: nested, pairs: pairs))
    }
    LockOrderChecking.mode = .off
    let added = median(zip(on, off).map { $0 - $1 })
    worst = max(worst, added)
    let held = nested ? "one other lock held" : "no other lock held"
    print(
        "\(held): off \(Int(median(off).rounded())) ns, warn \(Int(median(on).rounded())) ns per lock/unlock pair;"
            + " the checker adds \(Int(added.rounded())) ns (goal <= \(Int(limit)) ns)"
    )
}
#if !DEBUG
print("note: this is a release build, where the checker is compiled out; run it as a debug build")
#endif
if check && worst > limit {
    print("checker-cost: the checker adds \(Int(worst.rounded())) ns, over the goal of \(Int(limit)) ns")
    exit(1)
}
