// The shapes an app writes, for every contender of the scaling rows: the guarded state in a property of the app's
// own class, used from functions the optimizer cannot inline into the measuring loop (`@inline(never)`), the library
// used from this other package in a release build. Each of ours sits next to what a user would pick instead.

import ConcurrencyKit
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import Synchronization

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: Locks around an Int

/// A counter behind ConcurrencyKit's `MutexLock`.
final class MutexLockCounter: @unchecked Sendable {  // Safety: `value` is only touched while `lock` is held.
    private let lock = MutexLock()
    private var value = 0

    func increment() { self.lock.withLock { self.value &+= 1 } }
}

@inline(never)
func increment(_ counter: MutexLockCounter) { counter.increment() }

/// A counter in ConcurrencyKit's `AtomicBox`.
struct AtomicBoxCounter: Sendable {
    let count = AtomicBox(0)
}

@inline(never)
func increment(_ counter: AtomicBoxCounter) { counter.count.mutate { $0 &+= 1 } }

/// A counter behind a bare pthread mutex: the floor.
final class PthreadCounter: @unchecked Sendable {  // Safety: `value` is only touched while `mutex` is held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value = 0

    init() { pthread_mutex_init(self.mutex, nil) }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    func increment() {
        pthread_mutex_lock(self.mutex)
        self.value &+= 1
        pthread_mutex_unlock(self.mutex)
    }

    func set(_ newValue: Int) {
        pthread_mutex_lock(self.mutex)
        self.value = newValue
        pthread_mutex_unlock(self.mutex)
    }
}

@inline(never)
func increment(_ counter: PthreadCounter) { counter.increment() }

@inline(never)
func write(_ counter: PthreadCounter, _ value: Int) { counter.set(value) }

/// A counter in swift-nio's `NIOLockedValueBox`.
struct NIOCounter: Sendable {
    let count = NIOLockedValueBox(0)
}

@inline(never)
func increment(_ counter: NIOCounter) { counter.count.withLockedValue { $0 &+= 1 } }

@inline(never)
func write(_ counter: NIOCounter, _ value: Int) { counter.count.withLockedValue { $0 = value } }

/// A counter in the standard library's `Mutex`.
final class SynchronizationCounter: Sendable {
    let count = Mutex(0)
}

@inline(never)
func increment(_ counter: SynchronizationCounter) { counter.count.withLock { $0 &+= 1 } }

/// A counter behind the MCS queue lock (`FairLocks.swift`); each thread passes its own node.
final class MCSCounter: @unchecked Sendable {  // Safety: `value` is only touched while `lock` is held.
    private let lock = MCSLock()
    private var value = 0

    func increment(_ node: MCSNode) {
        self.lock.lock(node)
        self.value &+= 1
        self.lock.unlock(node)
    }

    func set(_ newValue: Int, _ node: MCSNode) {
        self.lock.lock(node)
        self.value = newValue
        self.lock.unlock(node)
    }
}

@inline(never)
func increment(_ counter: MCSCounter, _ node: MCSNode) { counter.increment(node) }

@inline(never)
func write(_ counter: MCSCounter, _ node: MCSNode, _ value: Int) { counter.set(value, node) }

/// A counter behind the ticket lock (`FairLocks.swift`).
final class TicketCounter: @unchecked Sendable {  // Safety: `value` is only touched while `lock` is held.
    private let lock = TicketLock()
    private var value = 0

    func increment() {
        self.lock.lock()
        self.value &+= 1
        self.lock.unlock()
    }

    func set(_ newValue: Int) {
        self.lock.lock()
        self.value = newValue
        self.lock.unlock()
    }
}

@inline(never)
func increment(_ counter: TicketCounter) { counter.increment() }

@inline(never)
func write(_ counter: TicketCounter, _ value: Int) { counter.set(value) }

/// A counter behind the strictly FIFO parking lock (`FairLocks.swift`); each thread passes its own waiter.
final class ParkingCounter: @unchecked Sendable {  // Safety: `value` is only touched while `lock` is held.
    private let lock = ParkingFIFOLock()
    private var value = 0

    func set(_ newValue: Int, _ waiter: ParkingWaiter) {
        self.lock.lock(waiter)
        self.value = newValue
        self.lock.unlock()
    }
}

@inline(never)
func write(_ counter: ParkingCounter, _ waiter: ParkingWaiter, _ value: Int) { counter.set(value, waiter) }

// MARK: QueueSafeValue

/// An app's stock counter on ConcurrencyKit's `QueueSafeValue`.
struct SafeValueStock: Sendable {
    let count = QueueSafeValue(value: 0)
}

@inline(never)
func writeHighest(_ stock: SafeValueStock, _ value: Int) {
    stock.count.wait.highestPriority.set(newValue: value)
}

@inline(never)
func writeLowest(_ stock: SafeValueStock, _ value: Int) {
    stock.count.wait.lowestPriority.set(newValue: value)
}

@inline(never)
func writeSuspending(_ stock: SafeValueStock, _ value: Int) async {
    await stock.count.suspend.lowestPriority.set(newValue: value)
}

/// The same counter on the `async` schedule, run on a serial queue of the app's.
struct AsyncStock: Sendable {
    let count = QueueSafeValue(value: 0)
    let queue = DispatchQueue(label: "scaling.async")
}

@inline(never)
func writeAsync(_ stock: AsyncStock, _ value: Int) {
    stock.count.async(performIn: stock.queue).lowestPriority.set(newValue: value)
}

/// Waits until every command issued on `stock` before it has completed.
func drain(_ stock: AsyncStock) {
    let done = DispatchSemaphore(value: 0)
    stock.count.async(performIn: stock.queue).lowestPriority.get { _ in done.signal() }
    done.wait()
}

/// The same counter confined to a serial `DispatchQueue`: the anchor of the `async` schedule.
final class QueueConfinedCounter: @unchecked Sendable {  // Safety: `value` is only touched on `queue`.
    let queue = DispatchQueue(label: "scaling.confined")
    var value = 0
}

@inline(never)
func writeAsync(_ counter: QueueConfinedCounter, _ value: Int) {
    counter.queue.async { counter.value = value }
}

/// Waits until every block sent to `counter`'s queue before it has run.
func drain(_ counter: QueueConfinedCounter) {
    counter.queue.sync {}
}

/// The same counter in an actor: the anchor of the `suspend` schedule.
actor ActorCounter {
    private var count = 0

    func set(_ newValue: Int) { self.count = newValue }
}

@inline(never)
func writeSuspending(_ counter: ActorCounter, _ value: Int) async { await counter.set(value) }

// MARK: Semaphores

/// A counter guarded by ConcurrencyKit's `CountingSemaphore` of one resource, used as a lock.
final class SemaphoreCounter: @unchecked Sendable {  // Safety: `value` is only touched while the resource is held.
    private let semaphore = CountingSemaphore(resources: 1)
    private var value = 0

    func increment() { self.semaphore.perform { self.value &+= 1 } }
}

@inline(never)
func increment(_ counter: SemaphoreCounter) { counter.increment() }

/// The same counter guarded by a `DispatchSemaphore` of value 1.
final class DispatchSemaphoreCounter: @unchecked Sendable {  // Safety: `value` is only touched while it is held.
    private let semaphore = DispatchSemaphore(value: 1)
    private var value = 0

    func increment() {
        self.semaphore.wait()
        self.value &+= 1
        self.semaphore.signal()
    }
}

@inline(never)
func increment(_ counter: DispatchSemaphoreCounter) { counter.increment() }

/// Work limited to 4 at a time by ConcurrencyKit's `CountingSemaphore`: a shared atomic count of the calls.
final class SemaphoreLimiter: Sendable {
    private let semaphore = CountingSemaphore(resources: 4)
    private let calls = Atomic<Int>(0)

    func call() { self.semaphore.perform { self.calls.wrappingAdd(1, ordering: .relaxed) } }
}

@inline(never)
func call(_ limiter: SemaphoreLimiter) { limiter.call() }

/// The same work limited by a `DispatchSemaphore` of value 4.
final class DispatchSemaphoreLimiter: Sendable {
    private let semaphore = DispatchSemaphore(value: 4)
    private let calls = Atomic<Int>(0)

    func call() {
        self.semaphore.wait()
        self.calls.wrappingAdd(1, ordering: .relaxed)
        self.semaphore.signal()
    }
}

@inline(never)
func call(_ limiter: DispatchSemaphoreLimiter) { limiter.call() }

// MARK: Queues

/// A tally that only one thread at a time touches: on a serial queue, in a subscriber, or under a mutex.
final class Tally: @unchecked Sendable {  // Safety: its owner serializes every access.
    var sum = 0
}

/// A cache confined to ConcurrencyKit's `GCDQueue`.
struct GCDQueueCache: Sendable {
    let queue = GCDQueue(name: "scaling.gcd")
    let tally = Tally()
}

@inline(never)
func touch(_ cache: GCDQueueCache) {
    let tally = cache.tally
    cache.queue.sync { tally.sum &+= 1 }
}

/// The same cache confined to a `DispatchQueue`.
struct DispatchQueueCache: Sendable {
    let queue = DispatchQueue(label: "scaling.dispatch")
    let tally = Tally()
}

@inline(never)
func touch(_ cache: DispatchQueueCache) {
    let tally = cache.tally
    cache.queue.sync { tally.sum &+= 1 }
}

// MARK: Multicast

/// An app's progress feed on ConcurrencyKit's `CallbackSubject`, with one inline (`.untouch`) subscriber that adds
/// the values up; calls to one subscriber never overlap, so the tally needs no lock of its own.
final class SubjectFeed: Sendable {
    let progress = CallbackSubject<Int, Never>()
    let tally = Tally()
    private let subscription: CallbackSubscription

    init() {
        let tally = self.tally
        self.subscription = self.progress.subscribe { tally.sum &+= $0 }
        self.progress.send(0)  // the mailbox takes its storage once, outside the measurement
    }
}

@inline(never)
func publish(_ feed: SubjectFeed, _ value: Int) { feed.progress.send(value) }

/// The subscriber's own work, called directly from every thread: the same tally, its calls kept from overlapping by
/// a bare pthread mutex, the cheapest way to keep the subject's promise.
final class DirectFeed: @unchecked Sendable {  // Safety: `tally` is only touched while `mutex` is held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let tally = Tally()

    init() { pthread_mutex_init(self.mutex, nil) }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    func receive(_ value: Int) {
        pthread_mutex_lock(self.mutex)
        self.tally.sum &+= value
        pthread_mutex_unlock(self.mutex)
    }
}

@inline(never)
func publish(_ feed: DirectFeed, _ value: Int) { feed.receive(value) }

// MARK: Operation queues

/// Nanoseconds to run `count` empty `ConcurrentOperation`s through a `Queuer` of width `width`, added one at a time
/// from one thread; the operations are made before the clock starts.
func timeQueuer(width: Int, count: Int) -> UInt64 {
    let queuer = Queuer(name: "scaling.queuer", maxConcurrentOperationCount: width)
    let operations = (0..<count).map { _ in ConcurrentOperation { _ in } }
    let start = monotonicNanoseconds()
    for operation in operations { queuer.addOperation(operation) }
    queuer.waitUntilAllOperationsAreFinished()
    return monotonicNanoseconds() - start
}

/// The same with `BlockOperation`s on an `OperationQueue` of the same width.
func timeOperationQueue(width: Int, count: Int) -> UInt64 {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = width
    let operations = (0..<count).map { _ in BlockOperation {} }
    let start = monotonicNanoseconds()
    for operation in operations { queue.addOperation(operation) }
    queue.waitUntilAllOperationsAreFinished()
    return monotonicNanoseconds() - start
}
