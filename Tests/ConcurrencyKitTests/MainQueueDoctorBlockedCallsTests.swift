import ConcurrencyKit
import Dispatch
import Foundation
import TestSupport
import Testing

/// A main queue blocked in one of ConcurrencyKit's blocking calls: ``MainQueueDoctor``'s warning names the call, its
/// site and its async form, instead of advising a way to drain a main queue that is drained already.
@Suite("MainQueueDoctor: a main queue blocked in a call of the package", .timeLimit(.minutes(1)))
struct MainQueueDoctorBlockedCallsTests {
    /// Each blocking call the doctor names, with the async form it advises; `scene(_:)` makes each, in this order.
    private static let calls: [(api: String, alternative: String)] = [
        ("CountingSemaphore.wait()", "try await semaphore.acquire()"),
        ("CountingSemaphore.wait(_:)", "await semaphore.wait(timeout:)"),
        ("CountingSemaphore.perform(_:)", "try await semaphore.withPermit { … }"),
        ("GCDGroup.wait()", "await group.waitForAll()"),
        ("GCDGroup.wait(timeout:)", "await group.waitForAll()"),
        ("Queuer.waitUntilAllOperationsAreFinished()", "await queuer.waitForAll()"),
        ("value.wait.lowestPriority.get()", "await value.suspend.lowestPriority.get()"),
        (
            "value.wait.lowestPriority.set(manualCompletion:)",
            "value.async(performIn: queue).lowestPriority.set(manualCompletion:)"
        ),
        ("GCDQueue.sync(_:)", "an actor, or `await withCheckedContinuation { c in queue.async { …; c.resume() } }`"),
    ]

    /// One blocking call, made on the main queue by `block` until `release` lets it return; `prepare` sets up what
    /// it waits for.
    fileprivate struct Scene: Sendable {
        var prepare: @Sendable () -> Void = {}
        let block: @Sendable () -> Void
        let release: @Sendable () -> Void
    }

    /// Writes the line of the blocking call to standard error, for the parent to find in the warning, and makes it.
    fileprivate static func site(_ line: UInt, _ call: () -> Void) {
        FileHandle.standardError.write(Data("blocking call at line \(line)\n".utf8))
        call()
    }

    fileprivate static func scene(_ index: Int) -> Scene {
        let semaphore = CountingSemaphore()
        let group = GCDGroup()
        let gate = DispatchSemaphore(value: 0)
        let open: @Sendable () -> Void = { gate.signal() }
        let value = QueueSafeValue(value: 0)
        let done = AtomicBox<CommandCompletionClosure?>(nil)
        let hold: @Sendable (inout Int, @escaping CommandCompletionClosure) -> Void = { _, end in
            done.mutate { $0 = end }
        }
        let finish: @Sendable () -> Void = { done.value?() }
        switch index {
        case 0: return Scene(block: { site(#line) { semaphore.wait() } }, release: { semaphore.signal() })
        case 1:
            return Scene(block: { site(#line) { _ = semaphore.wait(deadline()) } }, release: { semaphore.signal() })
        case 2: return Scene(block: { site(#line) { semaphore.perform {} } }, release: { semaphore.signal() })
        case 3:
            return Scene(
                prepare: { group.enter() },
                block: { site(#line) { group.wait() } },
                release: { group.leave() }
            )
        case 4:
            return Scene(
                prepare: { group.enter() },
                block: { site(#line) { _ = group.wait(timeout: deadline()) } },
                release: { group.leave() }
            )
        case 5:
            let queuer = Queuer(name: "test.doctor.queuer")
            return Scene(
                prepare: { queuer.addOperation { _ = gate.wait(timeout: deadline()) } },
                block: { site(#line) { queuer.waitUntilAllOperationsAreFinished() } },
                release: open
            )
        case 6:
            // The value is held by a manual command on another queue: the `wait` command waits in line.
            return Scene(
                prepare: {
                    value.async(performIn: .global()).lowestPriority.set(manualCompletion: hold)
                    _ = eventually { done.value != nil }
                },
                block: { site(#line) { _ = value.wait.lowestPriority.get() } },
                release: finish
            )
        case 7:
            // A manual `wait` command holds the caller until its `done`.
            return Scene(
                block: { site(#line) { value.wait.lowestPriority.set(manualCompletion: hold) } },
                release: finish
            )
        default:
            let queue = GCDQueue(name: "test.doctor.sync")
            return Scene(block: { site(#line) { queue.sync { _ = gate.wait(timeout: deadline()) } } }, release: open)
        }
    }

    /// Runs scene `index` in a child process, and returns the child's standard error.
    ///
    /// The scene's call blocks the main queue while a block is sent to main; the child exits once the doctor has
    /// spoken.
    private static func runScene(_ index: Int, inMainActorTask: Bool) async -> String {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [index, inMainActorTask] in
            MainQueueDoctor.patience = .milliseconds(50)
            // A blocking call inside a task is reported as a debug check: off here, where it is the point.
            if inMainActorTask { LockOrderChecking.mode = .off }
            let scene = MainQueueDoctorBlockedCallsTests.scene(index)
            let go = DispatchSemaphore(value: 0)
            let blockAfterGo: @Sendable () -> Void = {
                _ = go.wait(timeout: deadline())
                scene.block()
            }
            // Main is busy first, so that a block `prepare` sends elsewhere cannot settle the doctor.
            if inMainActorTask {
                Task { @MainActor in blockAfterGo() }
            } else {
                DispatchQueue.main.async(execute: blockAfterGo)
            }
            scene.prepare()
            go.signal()
            guard eventually({ MainQueueDoctor.probe.blockedCall != nil }) else { exit(2) }
            CallbackQueue.mainAsync.execute {}
            let spoke = eventually { MainQueueDoctor.probe.isSettled }
            scene.release()
            guard spoke else { exit(3) }
        }
        return text(result?.standardErrorContent)
    }

    @Test(
        "the warning names the blocking call the main queue is in, its site and its async form",
        arguments: 0..<9
    )
    func callNamed(index: Int) async throws {
        let stderr = await Self.runScene(index, inMainActorTask: false)
        let (api, alternative) = Self.calls[index]
        let line = try #require(stderr.firstMatch(of: /blocking call at line (\d+)/)?.1, "stderr: \(stderr)")
        #expect(
            stderr.contains(
                "the main queue is blocked in \(api), called at "
                    + "ConcurrencyKitTests/MainQueueDoctorBlockedCallsTests.swift:\(line)."
            ),
            "call \(index): the child's standard error was: \(stderr)"
        )
        #expect(stderr.contains("use \(alternative) instead"), "call \(index): \(stderr)")
        #expect(stderr.contains("Make the caller async"), "made outside a task: \(stderr)")
        #expect(!stderr.contains("dispatchMain()"), "main is drained: no advice to drain it: \(stderr)")
        #expect(stderr.components(separatedBy: "ConcurrencyKit: a block sent to the main queue").count == 2)
    }

    @Test("a blocking call made from a main-actor task, through a synchronous function, is named as async code's")
    func callFromTaskNamed() async {
        let stderr = await Self.runScene(3, inMainActorTask: true)
        #expect(stderr.contains("the main queue is blocked in GCDGroup.wait()"), "stderr: \(stderr)")
        #expect(stderr.contains("The call runs in async code: use await group.waitForAll() instead"), "\(stderr)")
    }
}
