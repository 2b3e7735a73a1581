// The rows of the scaling benchmark (issue 26): each measures one of ours next to its anchors at every thread count.

/// One contender of a row: how to run a `Load` once.
struct Contender {
    /// The name the tables and the chart show.
    let name: String
    /// Whether it is ConcurrencyKit's, rather than an anchor.
    let isOurs: Bool
    /// Whether its waiters spin: it then runs only up to the core count.
    let spins: Bool
    /// One measurement, its state made fresh before the clock starts.
    let run: (Load) -> Sample

    init(_ name: String, ours: Bool = false, spins: Bool = false, run: @escaping (Load) -> Sample) {
        self.name = name
        self.isOurs = ours
        self.spins = spins
        self.run = run
    }
}

/// One row: a contended path of ours and the anchors it is measured against, in one process.
struct Row {
    /// A short name for `--rows`.
    let id: String
    /// What the row measures.
    let title: String
    /// What the thread count counts: threads, tasks or the queue's width.
    let axis: String
    let contenders: [Contender]
}

/// The lock-hammer anchors: an unordered lock, swift-nio's box, the standard library's mutex, and the two fair
/// spinning references.
private func lockAnchors() -> [Contender] {
    [
        Contender("pthread_mutex") { load in
            let counter = PthreadCounter()
            return hammer(load) { _, _ in increment(counter) }
        },
        Contender("NIOLockedValueBox") { load in
            let counter = NIOCounter()
            return hammer(load) { _, _ in increment(counter) }
        },
        Contender("Synchronization.Mutex") { load in
            let counter = SynchronizationCounter()
            return hammer(load) { _, _ in increment(counter) }
        },
        Contender("MCS lock (spin)", spins: true) { load in
            let counter = MCSCounter()
            let nodes = (0..<load.threads).map { _ in MCSNode() }
            return hammer(load) { thread, _ in increment(counter, nodes[thread]) }
        },
        Contender("ticket lock (spin)", spins: true) { load in
            let counter = TicketCounter()
            return hammer(load) { _, _ in increment(counter) }
        },
    ]
}

/// Every row, in the order they run.
func allRows() -> [Row] {
    [
        Row(
            id: "lock",
            title: "Lock hammer: increment an Int under the lock",
            axis: "threads",
            contenders: [
                Contender("MutexLock.withLock", ours: true) { load in
                    let counter = MutexLockCounter()
                    return hammer(load) { _, _ in increment(counter) }
                },
                Contender("AtomicBox.mutate", ours: true) { load in
                    let counter = AtomicBoxCounter()
                    return hammer(load) { _, _ in increment(counter) }
                },
            ] + lockAnchors()
        ),
        Row(
            id: "wait-set",
            title: "QueueSafeValue `wait.set(newValue:)`, half the threads at highest priority",
            axis: "threads",
            contenders: [
                Contender("QueueSafeValue wait.set", ours: true) { load in
                    let stock = SafeValueStock()
                    return hammer(load) { thread, index in
                        if thread < load.threads / 2 { writeHighest(stock, index) } else { writeLowest(stock, index) }
                    }
                },
                Contender("NIOLockedValueBox") { load in
                    let counter = NIOCounter()
                    return hammer(load) { _, index in write(counter, index) }
                },
                Contender("pthread_mutex") { load in
                    let counter = PthreadCounter()
                    return hammer(load) { _, index in write(counter, index) }
                },
                Contender("MCS lock (spin)", spins: true) { load in
                    let counter = MCSCounter()
                    let nodes = (0..<load.threads).map { _ in MCSNode() }
                    return hammer(load) { thread, index in write(counter, nodes[thread], index) }
                },
                Contender("ticket lock (spin)", spins: true) { load in
                    let counter = TicketCounter()
                    return hammer(load) { _, index in write(counter, index) }
                },
                Contender("FIFO lock (park)") { load in
                    let counter = ParkingCounter()
                    let waiters = (0..<load.threads).map { _ in ParkingWaiter() }
                    return hammer(load) { thread, index in write(counter, waiters[thread], index) }
                },
            ]
        ),
        Row(
            id: "async-set",
            title: "QueueSafeValue `async(performIn:)` `set(newValue:)` from T threads, until the last has run",
            axis: "threads",
            contenders: [
                Contender("QueueSafeValue async.set", ours: true) { load in
                    let stock = AsyncStock()
                    let issued = hammer(load) { _, index in writeAsync(stock, index) }
                    let start = monotonicNanoseconds()
                    drain(stock)
                    return Sample(
                        nanoseconds: issued.nanoseconds + monotonicNanoseconds() - start,
                        operations: issued.operations
                    )
                },
                Contender("DispatchQueue.async") { load in
                    let counter = QueueConfinedCounter()
                    let issued = hammer(load) { _, index in writeAsync(counter, index) }
                    let start = monotonicNanoseconds()
                    drain(counter)
                    return Sample(
                        nanoseconds: issued.nanoseconds + monotonicNanoseconds() - start,
                        operations: issued.operations
                    )
                },
            ]
        ),
        Row(
            id: "suspend-set",
            title: "QueueSafeValue `await suspend.lowestPriority.set(newValue:)` from T tasks",
            axis: "tasks",
            contenders: [
                Contender("QueueSafeValue suspend.set", ours: true) { load in
                    let stock = SafeValueStock()
                    return hammerTasks(load) { _, index in await writeSuspending(stock, index) }
                },
                Contender("actor") { load in
                    let counter = ActorCounter()
                    return hammerTasks(load) { _, index in await writeSuspending(counter, index) }
                },
            ]
        ),
        Row(
            id: "semaphore-lock",
            title: "`CountingSemaphore.perform` as a lock (1 resource)",
            axis: "threads",
            contenders: [
                Contender("CountingSemaphore.perform", ours: true) { load in
                    let counter = SemaphoreCounter()
                    return hammer(load) { _, _ in increment(counter) }
                },
                Contender("DispatchSemaphore") { load in
                    let counter = DispatchSemaphoreCounter()
                    return hammer(load) { _, _ in increment(counter) }
                },
                Contender("pthread_mutex") { load in
                    let counter = PthreadCounter()
                    return hammer(load) { _, _ in increment(counter) }
                },
                // The semaphore hands each resource to the oldest waiter, as this lock does; DispatchSemaphore lets a
                // newcomer take a resource ahead of the waiters, which only strict order forbids.
                Contender("FIFO lock (park)") { load in
                    let counter = ParkingCounter()
                    let waiters = (0..<load.threads).map { _ in ParkingWaiter() }
                    return hammer(load) { thread, index in write(counter, waiters[thread], index) }
                },
            ]
        ),
        Row(
            id: "semaphore-limiter",
            title: "`CountingSemaphore.perform` as a limiter of width 4",
            axis: "threads",
            contenders: [
                Contender("CountingSemaphore(4).perform", ours: true) { load in
                    let limiter = SemaphoreLimiter()
                    return hammer(load) { _, _ in call(limiter) }
                },
                Contender("DispatchSemaphore(4)") { load in
                    let limiter = DispatchSemaphoreLimiter()
                    return hammer(load) { _, _ in call(limiter) }
                },
            ]
        ),
        Row(
            id: "gcd-sync",
            title: "`GCDQueue.sync` on one serial queue from T threads",
            axis: "threads",
            contenders: [
                Contender("GCDQueue.sync", ours: true) { load in
                    let cache = GCDQueueCache()
                    return hammer(load) { _, _ in touch(cache) }
                },
                Contender("DispatchQueue.sync") { load in
                    let cache = DispatchQueueCache()
                    return hammer(load) { _, _ in touch(cache) }
                },
            ]
        ),
        Row(
            id: "subject-send",
            title: "`CallbackSubject.send` from T threads, 1 `.untouch` subscriber",
            axis: "threads",
            contenders: [
                Contender("CallbackSubject.send", ours: true) { load in
                    let feed = SubjectFeed()
                    return hammer(load) { _, index in publish(feed, index) }
                },
                Contender("subscriber's work (pthread_mutex)") { load in
                    let feed = DirectFeed()
                    return hammer(load) { _, index in publish(feed, index) }
                },
            ]
        ),
        Row(
            id: "queuer",
            title: "`Queuer` of width T: empty operations added from one thread, until all have run",
            axis: "width",
            contenders: [
                Contender("Queuer", ours: true) { load in
                    Sample(
                        nanoseconds: timeQueuer(width: load.threads, count: load.perThread),
                        operations: load.perThread
                    )
                },
                Contender("OperationQueue") { load in
                    Sample(
                        nanoseconds: timeOperationQueue(width: load.threads, count: load.perThread),
                        operations: load.perThread
                    )
                },
            ]
        ),
    ]
}
