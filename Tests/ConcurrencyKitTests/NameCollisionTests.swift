// Compiles only while every public name of the contract is usable unqualified next to Foundation, Dispatch and
// Synchronization, and none of them shadows Swift's `Task`: a future name that collides fails this build.
import ConcurrencyKit
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@Suite("Umbrella: names next to Foundation, Dispatch and Synchronization", .timeLimit(.minutes(1)))
struct NameCollisionTests {
    @Test("every contract type is usable unqualified beside Task, Timer, Thread, OperationQueue, Mutex, Atomic")
    func everyNameResolves() async {
        // AtomicPrimitives
        let lock: MutexLock = MutexLock()
        let box: AtomicBox<Int> = AtomicBox(0)
        let locked = Locked(wrappedValue: 1)
        let semaphore: CountingSemaphore = CountingSemaphore(CountingSemaphore.Kind.binary)
        // SafeValueCore
        let value: QueueSafeValue<Int> = QueueSafeValue(value: 1)
        let synced: QueueSafeSyncedValue<Int> = QueueSafeSyncedValue(value: 1)
        let asynced: QueueSafeAsyncedValue<Int> = QueueSafeAsyncedValue(value: 1, queue: DispatchQueue(label: "n"))
        let error: QueueSafeValueError = .cancelled
        let done: CommandCompletionClosure = {}
        let schedules: (QueueSafeWaitSchedule<Int>, QueueSafeAsyncSchedule<Int>, QueueSafeSuspendSchedule<Int>) =
            (value.wait, value.async(performIn: .global()), value.suspend)
        let commands: (QueueSafeWaitCommand<Int>, QueueSafeAsyncCommand<Int>, QueueSafeSuspendCommand<Int>) =
            (schedules.0.lowestPriority, schedules.1.lowestPriority, schedules.2.highestPriority)
        // OperationQueuing
        let queuer: Queuer = Queuer(name: "names")
        let operation: ConcurrentOperation = ConcurrentOperation()
        let group: GroupOperation = GroupOperation([])
        let scheduler: Scheduler = Scheduler(deadline: .now() + 60)
        // DispatchKit
        let gcdQueue: GCDQueue = .default
        let gcdTask: GCDTask = GCDTask {}
        let gcdGroup: GCDGroup = GCDGroup()
        let gcdTimer: GCDTimer = GCDTimer(interval: 60)
        let once: OnceDispatcher = OnceDispatcher()
        // CallbackRouting
        let route: CallbackQueue = .untouch
        let subject: CallbackSubject<Int, Never> = CallbackSubject()
        let completion: SubjectCompletion<Never> = .finished
        let subscription: CallbackSubscription = subject.subscribe { _ in }

        // Foundation's, Dispatch's, Synchronization's and Swift's own names, still theirs.
        let swiftTask: Task<Int, Never> = Task { 42 }
        // The type only: an instance of Foundation's block-based `Timer` is never freed on Linux (LeakSanitizer).
        let foundationTimer: Timer.Type = Timer.self
        let thread: Thread = Thread {}
        let operationQueue: OperationQueue = OperationQueue()
        let mutex = Mutex(0)
        let atomic = Atomic(0)

        // Each unqualified name must mean the module's own type. A module imported directly shadows a name arriving
        // through the umbrella's re-exports, so a collision would not be ambiguous: these lines are what catch it.
        let _: _Concurrency.Task<Int, Never>.Type = Task<Int, Never>.self
        let _: Foundation.Timer.Type = Timer.self
        let _: Foundation.Thread.Type = Thread.self
        let _: Foundation.OperationQueue.Type = OperationQueue.self
        let _: Synchronization.Mutex<Int>.Type = Mutex<Int>.self
        let _: Synchronization.Atomic<Int>.Type = Atomic<Int>.self
        let _: AtomicPrimitives.MutexLock.Type = MutexLock.self
        let _: AtomicPrimitives.AtomicBox<Int>.Type = AtomicBox<Int>.self
        let _: AtomicPrimitives.Locked<Int>.Type = Locked<Int>.self
        let _: AtomicPrimitives.CountingSemaphore.Type = CountingSemaphore.self
        let _: SafeValueCore.QueueSafeValue<Int>.Type = QueueSafeValue<Int>.self
        let _: SafeValueCore.QueueSafeValueError.Type = QueueSafeValueError.self
        let _: OperationQueuing.Queuer.Type = Queuer.self
        let _: OperationQueuing.ConcurrentOperation.Type = ConcurrentOperation.self
        let _: OperationQueuing.GroupOperation.Type = GroupOperation.self
        let _: OperationQueuing.Scheduler.Type = Scheduler.self
        let _: DispatchKit.GCDQueue.Type = GCDQueue.self
        let _: DispatchKit.GCDTask.Type = GCDTask.self
        let _: DispatchKit.GCDGroup.Type = GCDGroup.self
        let _: DispatchKit.GCDTimer.Type = GCDTimer.self
        let _: DispatchKit.OnceDispatcher.Type = OnceDispatcher.self
        let _: DispatchKit.ClockTicks<ContinuousClock>.Type = ClockTicks<ContinuousClock>.self
        let _: CallbackRouting.CallbackQueue.Type = CallbackQueue.self
        let _: CallbackRouting.CallbackSubject<Int, Never>.Type = CallbackSubject<Int, Never>.self
        let _: CallbackRouting.SubjectCompletion<Never>.Type = SubjectCompletion<Never>.self
        let _: CallbackRouting.CallbackSubscription.Type = CallbackSubscription.self

        let swiftTaskReturned = await completes { #expect(await swiftTask.value == 42) }
        #expect(swiftTaskReturned)
        #expect(mutex.withLock { $0 } == 0)
        #expect(atomic.load(ordering: .relaxed) == 0)
        // A semaphore's `wait` and a synced value's commands block: they do not run on a task.
        let (semaphoreWaited, syncedRead) = await offPool { (semaphore.wait(.now()), synced.lowestPriority.get()) }
        #expect(box.value == 0 && locked.wrappedValue == 1 && semaphoreWaited == .success)
        #expect(syncedRead == .success(1) && error == .cancelled)
        #expect(group.operations.isEmpty && gcdQueue == .default && route.queue == nil)
        withExtendedLifetime(
            (lock, asynced, done, commands, queuer, operation, scheduler, gcdTask, gcdGroup, gcdTimer, once)
        ) {}
        withExtendedLifetime((completion, subscription, foundationTimer, thread, operationQueue)) {}
    }
}
