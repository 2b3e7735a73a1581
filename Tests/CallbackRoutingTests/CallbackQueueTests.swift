import AtomicPrimitives
import CallbackRouting
import Dispatch
import Foundation
import TestSupport
import Testing

@Suite("CallbackQueue", .timeLimit(.minutes(1)))
struct CallbackQueueTests {
    @Test("isOnMainQueue is true on the main queue only")
    func isOnMainQueue() async throws {
        try await offPoolTest { checks in
            checks.expect(CallbackQueue.isOnMainQueue == false)
            let onMain = AtomicBox<Bool?>(nil)
            let insideGlobalSync = AtomicBox<Bool?>(nil)
            checks.expect(
                onMainQueue {
                    onMain.mutate { $0 = CallbackQueue.isOnMainQueue }
                    DispatchQueue.global().sync {
                        insideGlobalSync.mutate { $0 = CallbackQueue.isOnMainQueue }
                    }
                }
            )
            checks.expect(onMain.value == true)
            checks.expect(insideGlobalSync.value == false, "main thread, but not the main queue")
        }
    }

    @Test("mainAsync hops to main even when called on main")
    func mainAsyncAlwaysHops() async throws {
        try await offPoolTest { checks in
            let ranInline = AtomicBox<Bool?>(nil)
            let ranOnMain = AtomicBox<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            checks.expect(
                onMainQueue {
                    let executed = AtomicBox(false)
                    CallbackQueue.mainAsync.execute {
                        executed.mutate { $0 = true }
                        ranOnMain.mutate { $0 = CallbackQueue.isOnMainQueue }
                        done.signal()
                    }
                    ranInline.mutate { $0 = executed.value }
                }
            )
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(ranInline.value == false)
            checks.expect(ranOnMain.value == true)
        }
    }

    @Test("mainCurrentOrAsync runs inline on main")
    func mainCurrentOrAsyncInlineOnMain() async throws {
        try await offPoolTest { checks in
            // A test running in parallel may have a hop of its own waiting on main, and then this call must hop too, to
            // keep order; so it is tried a few times, and must run inline at least once.
            let ranInline = AtomicBox(false)
            for _ in 0..<20 where !ranInline.value {
                let executed = AtomicBox(false)
                checks.expect(
                    onMainQueue {
                        CallbackQueue.mainCurrentOrAsync.execute { executed.mutate { $0 = true } }
                        ranInline.mutate { $0 = executed.value }
                    }
                )
            }
            checks.expect(ranInline.value)
        }
    }

    @Test("mainCurrentOrAsync hops to main from another thread")
    func mainCurrentOrAsyncHopsFromElsewhere() async throws {
        try await offPoolTest { checks in
            let ranOnMain = AtomicBox<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            CallbackQueue.mainCurrentOrAsync.execute {
                ranOnMain.mutate { $0 = CallbackQueue.isOnMainQueue }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(ranOnMain.value == true)
        }
    }

    @Test("mainCurrentOrAsync hops inside DispatchQueue.global().sync called from main")
    func mainCurrentOrAsyncInsideGlobalSync() async throws {
        try await offPoolTest { checks in
            let ranInline = AtomicBox<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            checks.expect(
                onMainQueue {
                    DispatchQueue.global().sync {
                        let executed = AtomicBox(false)
                        CallbackQueue.mainCurrentOrAsync.execute {
                            executed.mutate { $0 = true }
                            done.signal()
                        }
                        ranInline.mutate { $0 = executed.value }
                    }
                }
            )
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(ranInline.value == false)
        }
    }

    @Test("mainCurrentOrAsync on main runs after its own blocks still waiting on main")
    func mainCurrentOrAsyncKeepsOrder() async throws {
        try await offPoolTest { checks in
            let order = AtomicBox<[String]>([])
            let done = DispatchSemaphore(value: 0)
            checks.expect(
                onMainQueue {
                    // Sent from off the main queue: it hops and waits on main behind the block running now.
                    DispatchQueue.global().sync {
                        CallbackQueue.mainCurrentOrAsync.execute { order.mutate { $0.append("first") } }
                    }
                    // On main, but "first" has not started: this one must not overtake it.
                    CallbackQueue.mainCurrentOrAsync.execute {
                        order.mutate { $0.append("second") }
                        done.signal()
                    }
                    order.mutate { $0.append("caller returned") }
                }
            )
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(order.value == ["caller returned", "first", "second"])
        }
    }

    @Test("untouch runs inline on the caller's thread")
    func untouchRunsInline() {
        let caller = currentThreadID()
        let sameThread = AtomicBox(false)
        CallbackQueue.untouch.execute { sameThread.mutate { $0 = currentThreadID() == caller } }
        #expect(sameThread.value)
    }

    @Test("dispatch(q) hops to q, also when called on q")
    func dispatchAlwaysHops() async throws {
        try await offPoolTest { checks in
            let tagged = TaggedQueue("test.dispatch")
            let ranInline = AtomicBox<Bool?>(nil)
            let ranOnQueue = AtomicBox<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            tagged.queue.async {
                let executed = AtomicBox(false)
                CallbackQueue.dispatch(tagged.queue).execute {
                    executed.mutate { $0 = true }
                    ranOnQueue.mutate { $0 = tagged.isCurrent }
                    done.signal()
                }
                ranInline.mutate { $0 = executed.value }
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(ranInline.value == false)
            checks.expect(ranOnQueue.value == true)
        }
    }

    @Test("operationQueue(q) runs the block as an operation of q")
    func operationQueueRunsOnQueue() async throws {
        try await offPoolTest { checks in
            let queue = OperationQueue()
            let ranOnQueue = AtomicBox(false)
            let done = DispatchSemaphore(value: 0)
            CallbackQueue.operationQueue(queue).execute {
                ranOnQueue.mutate { $0 = OperationQueue.current === queue }
                done.signal()
            }
            checks.expect(done.wait(timeout: deadline()) == .success)
            checks.expect(ranOnQueue.value)
        }
    }

    @Test("queue names the dispatch queue each route runs on")
    func queueProperty() {
        let serial = DispatchQueue(label: "test.route")
        let operations = OperationQueue()
        operations.underlyingQueue = serial
        #expect(CallbackQueue.mainAsync.queue?.label == DispatchQueue.main.label)
        #expect(CallbackQueue.mainCurrentOrAsync.queue?.label == DispatchQueue.main.label)
        #expect(CallbackQueue.untouch.queue == nil)
        #expect(CallbackQueue.dispatch(serial).queue === serial)
        #expect(CallbackQueue.operationQueue(operations).queue === serial)
    }

    @Test("operationQueue takes any CallbackOperationQueue, and reports its underlying queue")
    func customOperationQueue() async throws {
        try await offPoolTest { checks in
            final class Recorder: CallbackOperationQueue, @unchecked Sendable {  // Safety: `added` is an AtomicBox.
                let added = AtomicBox(0)
                let target = DispatchQueue(label: "test.recorder")

                func addOperation(_ block: @escaping @Sendable () -> Void) {
                    self.added.mutate { $0 += 1 }
                    self.target.async(execute: block)
                }
            }
            let recorder = Recorder()
            let ran = DispatchSemaphore(value: 0)
            CallbackQueue.operationQueue(recorder).execute { ran.signal() }
            checks.expect(ran.wait(timeout: deadline()) == .success)
            checks.expect(recorder.added.value == 1)
            checks.expect(CallbackQueue.operationQueue(recorder).queue == nil, "a type that names no dispatch queue")
        }
    }
}
