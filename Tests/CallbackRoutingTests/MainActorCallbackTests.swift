import CallbackRouting
import Dispatch
import Foundation
import TestSupport
import Testing

/// Main-actor state that callbacks routed to main touch directly: that this file compiles is half of each test.
@MainActor
private final class Model {
    var events: [Int] = []
    var completions = 0
    /// Whether every callback ran on the main queue, the main actor's executor.
    var allOnMainQueue = true
    var subscriptions: [CallbackSubscription] = []

    func record(_ value: Int) {
        self.events.append(value)
        self.allOnMainQueue = self.allOnMainQueue && CallbackQueue.isOnMainQueue
    }

    func complete() {
        self.completions += 1
        self.allOnMainQueue = self.allOnMainQueue && CallbackQueue.isOnMainQueue
    }

    /// Each spelling a reader would write, on both main routes.
    func subscribeEverySpelling(to subject: CallbackSubject<Int, Never>) {
        // Unannotated: `on: .mainAsync` picks the main-actor overload, so the closure may touch `self`'s state.
        self.subscriptions.append(
            subject.subscribe(on: .mainAsync) {
                self.events.append($0 * 10)
            } receiveCompletion: { _ in
                self.complete()
            }
        )
        // Annotated.
        self.subscriptions.append(
            subject.subscribe(on: .mainCurrentOrAsync) { @MainActor value in self.record(value) }
        )
        // A method of the type, passed as a value.
        self.subscriptions.append(subject.subscribe(on: .mainAsync, receiveValue: self.record))
    }
}

@Suite("Main-actor callbacks on the main routes", .timeLimit(.minutes(1)))
@MainActor
struct MainActorCallbackTests {
    @Test("subscribe(on:) with a main route takes closures that touch main-actor state, and runs them on main")
    func subscribeOnMainRoutes() async {
        let model = Model()
        let subject = CallbackSubject<Int, Never>()
        model.subscribeEverySpelling(to: subject)
        // Sent from a thread of its own, so that every route hops.
        onNewThread {
            subject.send(1)
            subject.send(2)
            subject.send(completion: .finished)
        }
        #expect(await suspendUntil { model.completions == 1 && model.events.count == 6 })
        #expect(model.events.filter { $0 >= 10 } == [10, 20])
        #expect(model.events.filter { $0 < 10 }.sorted() == [1, 1, 2, 2])
        #expect(model.allOnMainQueue)
    }

    @Test("a model that keeps its subscriptions, and whose callbacks capture it, is released after the completion")
    func modelIsReleasedAfterTheCompletion() async {
        let subject = CallbackSubject<Int, Never>()
        var model: Model? = Model()
        model?.subscribeEverySpelling(to: subject)
        weak let released = model
        onNewThread {
            subject.send(1)
            subject.send(completion: .finished)
        }
        #expect(await suspendUntil { released?.completions == 1 })
        model = nil
        // The other two subscribers' completions may still wait on main; this suspension lets them run.
        #expect(
            await suspendUntil { released == nil },
            "model -> subscriptions -> callbacks -> model outlived the completion"
        )
    }

    @Test("MainCallbackQueue.execute takes both spellings on both routes, and runs them on main")
    func mainCallbackQueueExecute() async {
        let model = Model()
        MainCallbackQueue.mainAsync.execute { model.record(1) }
        MainCallbackQueue.mainCurrentOrAsync.execute { @MainActor in model.record(2) }
        onNewThread {
            MainCallbackQueue.mainCurrentOrAsync.execute { model.record(3) }  // from elsewhere: it hops
        }
        #expect(await suspendUntil { model.events.count == 3 })
        #expect(Set(model.events) == [1, 2, 3])
        #expect(model.allOnMainQueue)
    }

    @Test("CallbackQueue.execute takes a @MainActor closure on the main routes")
    func callbackQueueExecuteOnMainActor() async {
        let model = Model()
        let routes: [CallbackQueue] = [.mainAsync, .mainCurrentOrAsync]
        for (index, route) in routes.enumerated() {
            route.execute { @MainActor in model.record(index) }
        }
        onNewThread {
            CallbackQueue.mainCurrentOrAsync.execute { @MainActor in model.record(2) }
        }
        #expect(await suspendUntil { model.events.count == 3 })
        #expect(Set(model.events) == [0, 1, 2])
        #expect(model.allOnMainQueue)
    }

    @Test("an unannotated closure still takes the nonisolated execute, on every route")
    func unannotatedExecuteStaysNonisolated() async throws {
        try await offPoolTest { checks in
            let ran = DispatchSemaphore(value: 0)
            let onMain = AtomicBox<[Bool]>([])
            // Off main, on the caller's thread: a @MainActor overload would trap here.
            CallbackQueue.untouch.execute {
                onMain.mutate { $0.append(CallbackQueue.isOnMainQueue) }
                ran.signal()
            }
            checks.expect(ran.wait(timeout: deadline()) == .success)
            checks.expect(onMain.value == [false])
        }
    }

    @Test(
        "a @MainActor closure given to a route that runs elsewhere traps with a message naming the route",
        arguments: ["untouch", "dispatch", "operationQueue"]
    )
    func mainActorBlockOnOtherRouteTraps(route: String) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [route] in
            let queue: CallbackQueue =
                switch route {
                case "untouch": .untouch
                case "dispatch": .dispatch(DispatchQueue(label: "test.elsewhere"))
                default: .operationQueue(OperationQueue())
                }
            queue.execute { @MainActor in print("ran") }
        }
        let stderr = text(result?.standardErrorContent)
        let name =
            switch route {
            case "untouch": ".untouch"
            case "dispatch": ".dispatch(\"test.elsewhere\")"
            default: ".operationQueue"
            }
        #expect(
            stderr.contains(
                "CallbackQueue.execute: a @MainActor block was given to route \(name), which does not run it on the "
                    + "main actor; only .mainAsync and .mainCurrentOrAsync take @MainActor blocks"
            ),
            "\(stderr)"
        )
    }
}
