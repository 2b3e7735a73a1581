// The shapes an app writes: a thread-safe value kept in a property of the app's own type, used from functions the
// optimizer cannot inline into the measuring loop. Each of ours sits next to what a user would pick instead.

import ConcurrencyKit
import Foundation
import NIOConcurrencyHelpers
import OpenCombine
import Synchronization

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: A guarded Int

/// An app's stock counter on ConcurrencyKit's `QueueSafeValue`.
struct SafeValueStock: Sendable {
    let count = QueueSafeValue(value: 0)
}

@inline(never)
func read(_ stock: SafeValueStock) -> Int {
    switch stock.count.wait.lowestPriority.get() {
    case .success(let value): value
    case .failure: -1
    }
}

@inline(never)
func write(_ stock: SafeValueStock, _ value: Int) {
    stock.count.wait.lowestPriority.set(newValue: value)
}

@inline(never)
func read(_ stock: SafeValueStock) async -> Int {
    switch await stock.count.suspend.lowestPriority.get() {
    case .success(let value): value
    case .failure: -1
    }
}

/// The same counter behind a bare pthread mutex: the floor.
///
/// Its own class rather than BenchmarkSupport's `PthreadMutexCounter`, whose public property pays a runtime exclusivity
/// check per access: this private one pays none, as a C variable behind a C mutex would not.
final class PthreadStock: @unchecked Sendable {  // Safety: `value` is only touched while `mutex` is held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value = 0

    init() { pthread_mutex_init(self.mutex, nil) }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    func get() -> Int {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        return self.value
    }

    func set(_ newValue: Int) {
        pthread_mutex_lock(self.mutex)
        self.value = newValue
        pthread_mutex_unlock(self.mutex)
    }
}

struct PthreadStockHolder: Sendable {
    let count = PthreadStock()
}

@inline(never)
func read(_ stock: PthreadStockHolder) -> Int { stock.count.get() }

@inline(never)
func write(_ stock: PthreadStockHolder, _ value: Int) { stock.count.set(value) }

/// The same counter in swift-nio's `NIOLockedValueBox`.
struct NIOStock: Sendable {
    let count = NIOLockedValueBox(0)
}

@inline(never)
func read(_ stock: NIOStock) -> Int { stock.count.withLockedValue { $0 } }

@inline(never)
func write(_ stock: NIOStock, _ value: Int) { stock.count.withLockedValue { $0 = value } }

/// The same counter in the standard library's `Mutex`, which a struct cannot copy, so it lives in a class.
final class MutexStock: Sendable {
    let count = Mutex(0)
}

@inline(never)
func read(_ stock: MutexStock) -> Int { stock.count.withLock { $0 } }

@inline(never)
func write(_ stock: MutexStock, _ value: Int) { stock.count.withLock { $0 = value } }

/// The same counter in an actor.
actor ActorStock {
    private var count = 0

    func get() -> Int { self.count }
}

@inline(never)
func read(_ stock: ActorStock) async -> Int { await stock.get() }

// MARK: Multicast

/// What every subscriber does with a value: adds it up, so that the delivery cannot be optimized away.
final class Tally: @unchecked Sendable {  // Safety: bumped only from the benchmark's single sending thread.
    var sum = 0
}

/// An app's progress feed on ConcurrencyKit's `CallbackSubject`, with `subscribers` inline subscribers.
final class SubjectFeed: Sendable {
    let progress = CallbackSubject<Int, Never>()
    let tally = Tally()
    private let subscriptions: [CallbackSubscription]

    init(subscribers: Int) {
        let progress = self.progress
        let tally = self.tally
        self.subscriptions = (0..<subscribers).map { _ in progress.subscribe { tally.sum &+= $0 } }
        progress.send(0)  // mailboxes take their storage once, outside the measurement
    }
}

@inline(never)
func publish(_ feed: SubjectFeed, _ value: Int) { feed.progress.send(value) }

/// The same feed on OpenCombine's `PassthroughSubject` with `sink` subscribers.
final class CombineFeed: @unchecked Sendable {  // Safety: used from the benchmark's single thread.
    let progress = PassthroughSubject<Int, Never>()
    let tally = Tally()
    private var subscriptions: [AnyCancellable] = []

    init(subscribers: Int) {
        let tally = self.tally
        for _ in 0..<subscribers {
            self.subscriptions.append(self.progress.sink { tally.sum &+= $0 })
        }
        self.progress.send(0)
    }
}

@inline(never)
func publish(_ feed: CombineFeed, _ value: Int) { feed.progress.send(value) }

// MARK: Queues

/// A cache confined to ConcurrencyKit's `GCDQueue`.
struct GCDQueueCache: Sendable {
    let queue = GCDQueue(name: "consumer.gcd")
    let tally = Tally()
}

@inline(never)
func touch(_ cache: GCDQueueCache) {
    let tally = cache.tally
    cache.queue.sync { tally.sum &+= 1 }
}

/// The same cache confined to a `DispatchQueue`.
struct DispatchQueueCache: Sendable {
    let queue = DispatchQueue(label: "consumer.dispatch")
    let tally = Tally()
}

@inline(never)
func touch(_ cache: DispatchQueueCache) {
    let tally = cache.tally
    cache.queue.sync { tally.sum &+= 1 }
}

// MARK: Requests under a queue's limit

/// An app's API client: every request runs on its Queuer, and retries with back-off when it fails.
struct RequestClient: Sendable {
    let queuer = Queuer(name: "consumer.requests", maxConcurrentOperationCount: 4)
    let retries = RetryConfiguration(
        maximumAttempts: 3,
        policy: .exponential(initial: .milliseconds(100), maximum: .seconds(2), jitter: 0.2)
    )
}

/// One request with `Queuer.run`: one attempt.
@inline(never)
func request(_ client: RequestClient, _ index: Int) async throws -> Int {
    try await client.queuer.run { index }
}

/// The same request with `Queuer.run(retrying:)`; its first attempt succeeds.
@inline(never)
func requestRetrying(_ client: RequestClient, _ index: Int) async throws -> Int {
    try await client.queuer.run(retrying: client.retries) { index }
}
