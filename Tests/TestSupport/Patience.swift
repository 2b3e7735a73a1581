import Dispatch
import Foundation

/// How long, in seconds, a test waits at most for something that must happen: two minutes.
///
/// Not a measure of speed, but a safety net that only a hang reaches. A test on a loaded machine (two cores shared
/// with other builds, a sanitizer, schedule chaos) can wait many seconds for a core or a thread of the cooperative
/// pool, and a test that failed whenever it did would fail for no reason tied to the code. So every wait for "this
/// must eventually happen" uses this one limit (``deadline(_:)``, ``eventually(_:)``, ``suspendUntil(isolation:_:)``,
/// ``runOnThreads(_:seconds:_:)``...), and ends a test only where the code under test hangs. The suites'
/// `.timeLimit` is the hang guard that reports such a test first (it cancels an async test, whose waits then give
/// up), and the gate's time limit per stage (scripts/stage.sh) ends a whole run that hangs.
///
/// A wait that proves that something does *not* happen (a wait that must time out) keeps its own short limit: a
/// slow machine can only make it pass without checking much, never fail.
public let patienceSeconds = 120

/// ``patienceSeconds`` as a `Duration`: for the real-time limits of async waits, and of a `TestClock`'s
/// `run(timeout:)` and `waitForSleepers(_:timeout:)`, whose ten-second default is such a wait too.
public let patienceLimit = Duration.seconds(patienceSeconds)

/// How long, in seconds, a run may stand still before a wait for it gives up: ``waitForProgress(stillFor:progress:until:)``.
///
/// Thirty seconds in which no command, block or callback of the run completed: under schedule chaos on a loaded
/// machine a run can take far longer than its quiet time, but it does not stop moving.
public let stallSeconds = 30

/// Waits until `isDone()` holds, for as long as the run keeps moving; blocks the calling thread.
///
/// A run is stuck, and the wait gives up, only when `progress()` (a count of the run's completed work, which only
/// grows) stayed the same for `seconds`: a run that is slow but still completes work is not stuck, however long it
/// takes. `isDone()` is asked about every millisecond; it may itself wait a little (``waitForProgress(_:stillFor:progress:)``
/// waits on a group).
///
/// - Returns: `false` if the run stood still for `seconds` before `isDone()` held.
public func waitForProgress(
    stillFor seconds: Int = stallSeconds,
    progress: () -> Int,
    until isDone: () -> Bool
) -> Bool {
    var last = progress()
    var limit = deadline(seconds)
    while !isDone() {
        let now = progress()
        if now != last {
            last = now
            limit = deadline(seconds)
        } else if DispatchTime.now() > limit {
            return false
        }
        Thread.sleep(forTimeInterval: 0.001)
    }
    return true
}

/// Waits until `group` is empty, for as long as `progress()` keeps moving: the form of
/// ``waitForProgress(stillFor:progress:until:)`` for the work a group counts.
///
/// - Returns: `false` if the run stood still for `seconds` before the group emptied.
public func waitForProgress(_ group: DispatchGroup, stillFor seconds: Int = stallSeconds, progress: () -> Int) -> Bool {
    waitForProgress(stillFor: seconds, progress: progress) {
        group.wait(timeout: .now() + .milliseconds(10)) == .success
    }
}

/// Waits until `semaphore` is signalled, for as long as `progress()` keeps moving.
///
/// - Returns: `false` if the run stood still for `seconds` before the semaphore was signalled.
public func waitForProgress(
    _ semaphore: DispatchSemaphore,
    stillFor seconds: Int = stallSeconds,
    progress: () -> Int
) -> Bool {
    waitForProgress(stillFor: seconds, progress: progress) {
        semaphore.wait(timeout: .now() + .milliseconds(10)) == .success
    }
}

/// Runs `body(index)` on `count` dedicated threads released together, and waits until all of them returned, for as
/// long as `progress()` keeps moving: ``runOnThreads(_:seconds:_:)`` for a run that may be slow but must not stop.
///
/// - Returns: `false` if the run stood still for `seconds` before every thread returned.
@discardableResult
public func runOnThreads(
    _ count: Int,
    stillFor seconds: Int = stallSeconds,
    progress: () -> Int,
    _ body: @escaping @Sendable (Int) -> Void
) -> Bool {
    let finished = startThreads(count, body)
    return waitForProgress(finished, stillFor: seconds, progress: progress)
}
