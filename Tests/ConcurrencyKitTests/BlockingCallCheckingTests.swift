import ConcurrencyKit
import Dispatch
import Foundation
import TestSupport
import Testing

// The checks this suite tests exist in debug builds only.
#if DEBUG
/// The blocking-call check's own switch, which follows the lock-order checker's until set.
///
/// `BlockingCallChecking.mode` and `CONCURRENCYKIT_BLOCKING_CHECK`; each test runs in a process of its own, since the
/// switches are global.
@Suite("BlockingCallChecking: the blocking-call check has a switch of its own", .timeLimit(.minutes(2)))
struct BlockingCallCheckingTests {
    @Test("until set, the check follows LockOrderChecking.mode; set, it does not")
    func followsUntilSet() async {
        await #expect(processExitsWith: .success) {
            unsetenv(BlockingCallChecking.environmentVariable)
            BlockingCallChecking.reloadModeFromEnvironment()
            LockOrderChecking.mode = .trap
            guard BlockingCallChecking.mode == .trap else { exit(1) }
            LockOrderChecking.mode = .off
            guard BlockingCallChecking.mode == .off else { exit(2) }
            BlockingCallChecking.mode = .warn
            LockOrderChecking.mode = .trap
            guard BlockingCallChecking.mode == .warn, LockOrderChecking.mode == .trap else { exit(3) }
        }
    }

    @Test("off, a parking wait inside a task does not stop the process, whatever the lock-order checker's mode")
    func offIsOff() async {
        await #expect(processExitsWith: .success) {
            LockOrderChecking.mode = .trap
            BlockingCallChecking.mode = .off
            parkBriefly()
        }
    }

    @Test("trap, a parking wait inside a task stops the process, naming the check's own switch")
    func trapNamesItsSwitch() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LockOrderChecking.mode = .off
            BlockingCallChecking.mode = .trap
            parkBriefly()
        }
        let stderr = text(result?.standardErrorContent)
        #expect(stderr.contains("CountingSemaphore.wait(_:) blocks its thread"), "\(stderr)")
        #expect(stderr.contains("CONCURRENCYKIT_BLOCKING_CHECK=warn|trap|off"), "\(stderr)")
        #expect(stderr.contains("BlockingCallChecking.mode is trap"), "\(stderr)")
    }

    @Test("CONCURRENCYKIT_BLOCKING_CHECK sets the mode; a value that is not a mode leaves it following the checker")
    func environmentVariable() async {
        await #expect(processExitsWith: .success) {
            LockOrderChecking.mode = .trap
            setenv(BlockingCallChecking.environmentVariable, "OFF", 1)
            BlockingCallChecking.reloadModeFromEnvironment()
            guard BlockingCallChecking.mode == .off else { exit(1) }
            setenv(BlockingCallChecking.environmentVariable, "sometimes", 1)
            BlockingCallChecking.reloadModeFromEnvironment()
            guard BlockingCallChecking.mode == .trap else { exit(2) }
        }
    }
}

/// A wait of 5 ms on a semaphore nobody signals, from a synchronous function: it parks.
private func parkBriefly() {
    _ = CountingSemaphore().wait(.milliseconds(5))
}
#endif
