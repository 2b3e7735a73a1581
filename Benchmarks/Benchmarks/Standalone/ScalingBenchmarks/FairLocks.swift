// The fair references: locks that hand over in strict FIFO order, written here so that the ordered hand-over of
// ours can be compared with the cheapest hand-over that keeps the same order. The MCS lock and the ticket lock spin
// (each MCS waiter on a flag of its own, every ticket waiter on one shared counter), so they run only up to the core
// count; the parking lock puts each waiter to sleep on a condition of its own and hands the lock to the first one.

import Synchronization

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread's place in an `MCSLock`'s queue: one per thread, reused for every acquisition.
final class MCSNode: Sendable {
    let next = Atomic<Unmanaged<MCSNode>?>(nil)
    let isWaiting = Atomic<Bool>(false)
}

/// The Mellor-Crummey–Scott queue lock: waiters queue in arrival order, each spins on its own node, and the holder
/// hands the lock to the next node by clearing its flag.
final class MCSLock: Sendable {
    private let tail = Atomic<Unmanaged<MCSNode>?>(nil)

    func lock(_ node: MCSNode) {
        node.next.store(nil, ordering: .relaxed)
        node.isWaiting.store(true, ordering: .relaxed)
        let me = Unmanaged.passUnretained(node)
        guard let predecessor = self.tail.exchange(me, ordering: .acquiringAndReleasing) else { return }
        predecessor.takeUnretainedValue().next.store(me, ordering: .releasing)
        while node.isWaiting.load(ordering: .acquiring) {}
    }

    func unlock(_ node: MCSNode) {
        var successor = node.next.load(ordering: .acquiring)
        if successor == nil {
            let me = Unmanaged.passUnretained(node)
            if self.tail.compareExchange(expected: me, desired: nil, ordering: .acquiringAndReleasing).exchanged {
                return
            }
            // A successor has swapped itself into the tail and is about to link itself behind this node.
            repeat { successor = node.next.load(ordering: .acquiring) } while successor == nil
        }
        successor!.takeUnretainedValue().isWaiting.store(false, ordering: .releasing)
    }
}

/// A ticket lock: each thread takes the next ticket and spins until the counter of served tickets reaches it.
final class TicketLock: Sendable {
    private let nextTicket = Atomic<Int>(0)
    private let nowServing = Atomic<Int>(0)

    func lock() {
        let ticket = self.nextTicket.wrappingAdd(1, ordering: .relaxed).oldValue
        while self.nowServing.load(ordering: .acquiring) != ticket {}
    }

    func unlock() {
        self.nowServing.wrappingAdd(1, ordering: .releasing)
    }
}

/// A thread's place in a `ParkingFIFOLock`'s queue: a condition of its own, reused for every acquisition.
final class ParkingWaiter: @unchecked Sendable {  // Safety: `isGranted` is only touched under the lock's mutex.
    let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    var isGranted = false

    init() { precondition(pthread_cond_init(self.condition, nil) == 0, "ParkingWaiter: pthread_cond_init failed") }

    deinit {
        pthread_cond_destroy(self.condition)
        self.condition.deallocate()
    }
}

/// A strictly FIFO lock whose waiters sleep, the reference for more threads than cores.
///
/// A waiter parks on its own condition, and the holder hands the lock to the first waiter directly, so nobody can
/// take it in between.
final class ParkingFIFOLock: @unchecked Sendable {  // Safety: `isHeld` and `waiters` are only touched under `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var isHeld = false
    private var waiters: [ParkingWaiter] = []

    init() {
        precondition(pthread_mutex_init(self.mutex, nil) == 0, "ParkingFIFOLock: pthread_mutex_init failed")
        self.waiters.reserveCapacity(256)
    }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    func lock(_ waiter: ParkingWaiter) {
        pthread_mutex_lock(self.mutex)
        if !self.isHeld {
            self.isHeld = true
        } else {
            self.waiters.append(waiter)
            while !waiter.isGranted { pthread_cond_wait(waiter.condition, self.mutex) }
            waiter.isGranted = false
        }
        pthread_mutex_unlock(self.mutex)
    }

    func unlock() {
        pthread_mutex_lock(self.mutex)
        if self.waiters.isEmpty {
            self.isHeld = false
        } else {
            let next = self.waiters.removeFirst()
            next.isGranted = true
            pthread_cond_signal(next.condition)
        }
        pthread_mutex_unlock(self.mutex)
    }
}
