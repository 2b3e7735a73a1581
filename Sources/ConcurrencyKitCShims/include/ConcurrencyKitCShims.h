// The per-thread records of ConcurrencyKit's lock-order checker (debug builds): the locks a thread holds and the
// orders it has already seen; also the wait report's records (WaitThread.c), the processor count the spin policy
// uses (Processors.c) and the futex calls under the lock word on Linux (Futex.c). The records are in C because a
// debug build does not optimize Swift, and this path runs on every acquisition of every observed lock: thread-local
// storage, plain structs and no reference counting keep it to a few dozen instructions. None of this file is API:
// AtomicPrimitives uses it, and DispatchKit reads one switch of the wait records (`ck_wait_records_syncs`).
// (`ck_thread_self`, below, is inlined wherever AtomicPrimitives' inlinable code is, so clients compile it too, and
// call `ck_thread_self_call`.)

#ifndef CONCURRENCYKIT_C_SHIMS_H
#define CONCURRENCYKIT_C_SHIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GLIBC__)
/// The calling thread's `pthread_self()` without the call, for AtomicPrimitives' `currentThreadID()` on x86-64 glibc
/// (other platforms call ``ck_thread_self_call()`` there): glibc keeps the thread block's own address at `%fs:0x10`,
/// and that address is what `pthread_self()` returns. `volatile`, so that the compiler never reuses a value read
/// before an `await` that may have moved the task to another thread.
static inline uintptr_t ck_thread_self(void) {
    uintptr_t self;
    __asm__ volatile("movq %%fs:0x10, %0" : "=r"(self));
    return self;
}
#endif

/// The calling thread's `pthread_self()`, from a function defined out of line, for AtomicPrimitives'
/// `currentThreadID()` where ``ck_thread_self()`` is not available. glibc declares `pthread_self` `const`, so an
/// optimized Swift `async` function that calls it directly may reuse a value read before an `await`, on the thread
/// the task ran on then; a call the compiler cannot see into is made again after every `await`.
uintptr_t ck_thread_self_call(void);

/// A lock a thread holds: its serial number, its node and peer class (unretained, by address), and where it was taken.
typedef struct {
    uint64_t serial;
    const void *_Nonnull node;
    const void *_Nullable peers;
    const uint8_t *_Nonnull file;
    intptr_t fileCount;
    uintptr_t line;
} ck_lock_order_held;

/// One thread's records. `held[0..<count]` are the locks it holds, oldest first.
typedef struct ck_lock_order_thread ck_lock_order_thread;

/// The calling thread's records, made on first use and freed when the thread exits; emptied if `epoch` differs from
/// the one they were last used with (the checker was off meanwhile and saw no releases).
ck_lock_order_thread *_Nonnull ck_lock_order_current(uint64_t epoch);

/// The number of locks the thread holds.
intptr_t ck_lock_order_count(const ck_lock_order_thread *_Nonnull thread);

/// The `index`th lock the thread holds, oldest first.
const ck_lock_order_held *_Nonnull ck_lock_order_held_at(const ck_lock_order_thread *_Nonnull thread, intptr_t index);

/// Whether every order "held lock, then `serial`" is one the thread has seen before, and no held lock shares the peer
/// class `peers` (when not null): then acquiring `serial` needs no further check.
bool ck_lock_order_all_known(const ck_lock_order_thread *_Nonnull thread, uint64_t serial, const void *_Nullable peers);

/// Remembers the order `from`, then `to`; returns false if it was already remembered.
bool ck_lock_order_remember(ck_lock_order_thread *_Nonnull thread, uint64_t from, uint64_t to);

/// Records that the thread now holds the lock `serial`.
void ck_lock_order_push(
    ck_lock_order_thread *_Nonnull thread,
    uint64_t serial,
    const void *_Nonnull node,
    const void *_Nullable peers,
    const uint8_t *_Nonnull file,
    intptr_t fileCount,
    uintptr_t line
);

/// The acquisition fast path: if ``ck_lock_order_all_known`` holds, records the lock as held and returns true;
/// otherwise changes nothing and returns false, and the caller checks the new orders, then pushes.
bool ck_lock_order_acquire(
    uint64_t epoch,
    uint64_t serial,
    const void *_Nonnull node,
    const void *_Nullable peers,
    const uint8_t *_Nonnull file,
    intptr_t fileCount,
    uintptr_t line
);

/// Records that the calling thread no longer holds `serial` (locks may be released in any order); nothing happens if
/// it has no records or does not hold it.
void ck_lock_order_release(uint64_t serial);

/// Whether the calling thread holds `serial`, by its records.
bool ck_lock_order_holds(uint64_t serial);

/// Counts a lock destroyed while another thread held it (an orphan): every thread's next acquisition then takes the
/// slow path, where ``ck_lock_order_orphans_seen`` tells its holder to drop the lock from its records.
void ck_lock_order_orphaned(void);

/// Whether the thread has looked for its orphans since the last one was counted (a new thread has not looked yet);
/// if not, records that it looks now, and returns false: the caller then drops its orphans from its records.
bool ck_lock_order_orphans_seen(ck_lock_order_thread *_Nonnull thread);

// The per-thread records of ConcurrencyKit's wait report (all builds): the wait a thread is parked in. The owning
// thread writes its record with plain stores; a report reads it from another thread without stopping the owner.

/// The wait a thread is parked in.
typedef struct {
    /// The resource waited on, an unretained Swift object that the waiting thread keeps alive while it waits.
    const void *_Nullable object;
    /// The blocking call, as users write it.
    const uint8_t *_Nullable api;
    intptr_t apiCount;
    /// The caller's file and line.
    const uint8_t *_Nullable file;
    intptr_t fileCount;
    uintptr_t line;
    /// When the wait began, in `DispatchTime.uptimeNanoseconds`; 0 for now, read coarsely (on Linux, to the tick the
    /// kernel last kept, a few milliseconds at most).
    uint64_t since;
} ck_wait_entry;

/// Publishes the calling thread's wait; the thread must keep `entry->object` alive until ``ck_wait_end`` (or
/// ``ck_wait_end_of`` with the record returned).
/// - Returns: The calling thread's record, for ``ck_wait_end_of``.
void *_Nonnull ck_wait_begin(const ck_wait_entry *_Nonnull entry);

/// Ends the calling thread's wait; returns once no report reads it any more.
void ck_wait_end(void);

/// Ends the wait of the thread whose record ``ck_wait_begin`` returned, from any thread, while that thread is still
/// in the call that began it; returns once no report reads it any more.
void ck_wait_end_of(void *_Nonnull record);

/// Whether a `sync` onto a queue records its wait (`WaitReport.recordsQueueSyncs`); 0 or 1, read and written with
/// ``ck_wait_records_syncs`` and ``ck_wait_set_records_syncs``.
extern int ck_wait_syncs_recorded;

/// Whether a `sync` onto a queue records its wait: one relaxed load.
static inline bool ck_wait_records_syncs(void) {
    return __atomic_load_n(&ck_wait_syncs_recorded, __ATOMIC_RELAXED) != 0;
}

/// Sets whether a `sync` onto a queue records its wait.
static inline void ck_wait_set_records_syncs(bool on) {
    __atomic_store_n(&ck_wait_syncs_recorded, on ? 1 : 0, __ATOMIC_RELAXED);
}

/// What a report is shown of one waiting thread, for the time of one call: its wait, whose `object` is alive until
/// the call returns. The call must only copy, and retain the object: the thread cannot end its wait meanwhile.
typedef void (*ck_wait_visitor)(
    void *_Nullable context,
    uintptr_t thread,
    uint64_t kernelThread,
    const ck_wait_entry *_Nonnull wait
);

/// Shows `visitor` every thread that waits now, one at a time.
void ck_wait_visit(void *_Nullable context, ck_wait_visitor _Nonnull visitor);

/// Writes the name of the thread with the kernel ID `kernelThread` into `buffer`; false if it has none, it has exited,
/// or the platform does not say.
bool ck_wait_thread_name(uint64_t kernelThread, char *_Nonnull buffer, size_t size);

#if defined(__linux__)
/// Sleeps while the 32-bit `word` holds `expected` (a private `FUTEX_WAIT`), until a ``ck_futex_wake_one(_:)`` on it
/// or a spurious wake-up; returns at once if the word holds something else. The caller looks at the word again.
/// For ``RawMutex``'s lock word, under ``LockCore``, on Linux (Futex.c). Returns 0, or the error of a failed call
/// other than `EAGAIN` and `EINTR`.
int ck_futex_wait(void *_Nonnull word, uint32_t expected);

/// Wakes one thread sleeping in ``ck_futex_wait(_:_:)`` on `word`, if any; errors are ignored, as glibc does.
void ck_futex_wake_one(void *_Nonnull word);
#endif

/// How many processors the process may run on, at least 1: on Linux the CPUs of its main thread's affinity mask (what
/// `taskset` or a container's cpuset leaves it; a CPU quota such as Docker's `--cpus` leaves the mask whole, and is
/// not counted), elsewhere the processors online.
long ck_usable_processor_count(void);

#endif
