// The per-thread records of ConcurrencyKit's lock-order checker (debug builds): the locks a thread holds and the
// orders it has already seen. They are in C because a debug build does not optimize Swift, and this path runs on
// every acquisition of every observed lock: thread-local storage, plain structs and no reference counting keep it to
// a few dozen instructions. Only AtomicPrimitives uses them; they are not API.

#ifndef CONCURRENCYKIT_C_SHIMS_H
#define CONCURRENCYKIT_C_SHIMS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

// The per-thread records of ConcurrencyKit's wait report (all builds): the wait a thread is parked in, and the
// resources it holds that have no holder of their own to ask (a semaphore's permits taken by `perform`). The owning
// thread writes them with plain stores; a report reads them from another thread without stopping the owner.

/// A resource a thread holds: its identity, and where it was taken.
typedef struct {
    uintptr_t resource;
    const uint8_t *_Nullable file;
    intptr_t fileCount;
    uintptr_t line;
} ck_wait_held;

/// The wait a thread is parked in.
typedef struct {
    /// What kind of wait, as the Swift side numbers them.
    uintptr_t kind;
    /// The resource waited on, an unretained Swift object that the waiting thread keeps alive while it waits.
    const void *_Nullable object;
    /// The blocking call, as users write it.
    const uint8_t *_Nullable api;
    intptr_t apiCount;
    /// The caller's file and line.
    const uint8_t *_Nullable file;
    intptr_t fileCount;
    uintptr_t line;
    /// When the wait began, in `DispatchTime.uptimeNanoseconds`.
    uint64_t since;
} ck_wait_entry;

/// Publishes the calling thread's wait; the thread must keep `entry->object` alive until ``ck_wait_end``.
void ck_wait_begin(const ck_wait_entry *_Nonnull entry);

/// Ends the calling thread's wait; returns once no report reads it any more.
void ck_wait_end(void);

/// How many held resources a thread's record keeps; more are counted, not kept, so that releases still balance.
#define CK_HELD_SLOTS 16

/// One held resource, in fields a report may read while the owner writes them.
typedef struct {
    _Atomic uintptr_t resource;
    _Atomic uintptr_t file;
    _Atomic intptr_t fileCount;
    _Atomic uintptr_t line;
} ck_held_slot;

/// One thread's records, linked into the process's list from its first use until the thread exits.
typedef struct ck_wait_thread {
    struct ck_wait_thread *_Nullable previous;
    struct ck_wait_thread *_Nullable next;
    uintptr_t thread;
    uint64_t kernelThread;

    /// Whether `wait` holds a wait; written by the owner, read by a report.
    _Atomic int active;
    /// Whether a report reads `wait` now: the owner does not end its wait until it is clear.
    _Atomic int pinned;
    _Atomic uintptr_t kind;
    _Atomic uintptr_t object;
    _Atomic uintptr_t api;
    _Atomic intptr_t apiCount;
    _Atomic uintptr_t file;
    _Atomic intptr_t fileCount;
    _Atomic uintptr_t line;
    _Atomic uint64_t since;

    /// Odd while the owner changes `held`: a seqlock for the readers.
    _Atomic uint64_t heldSequence;
    _Atomic intptr_t heldCount;
    /// Held resources past `CK_HELD_SLOTS`: counted only.
    intptr_t heldOverflow;
    ck_held_slot held[CK_HELD_SLOTS];
} ck_wait_thread;

/// The calling thread's record, or NULL before its first use. Initial-exec: one load from the thread pointer.
extern _Thread_local ck_wait_thread *_Nullable ck_wait_current __attribute__((tls_model("initial-exec")));

/// Makes the calling thread's record, links it into the process's list, and frees it when the thread exits.
ck_wait_thread *_Nonnull ck_wait_make_thread(void);

static inline ck_wait_thread *_Nonnull ck_wait_self(void) {
    ck_wait_thread *_Nullable thread = ck_wait_current;
    return thread != NULL ? thread : ck_wait_make_thread();
}

/// Records that the calling thread holds `resource`, taken at `file`:`line`.
static inline void ck_wait_hold(uintptr_t resource, const uint8_t *_Nullable file, intptr_t fileCount, uintptr_t line) {
    ck_wait_thread *_Nonnull thread = ck_wait_self();
    intptr_t count = atomic_load_explicit(&thread->heldCount, memory_order_relaxed);
    if (count == CK_HELD_SLOTS) {
        thread->heldOverflow += 1;
        return;
    }
    uint64_t sequence = atomic_load_explicit(&thread->heldSequence, memory_order_relaxed);
    atomic_store_explicit(&thread->heldSequence, sequence + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    ck_held_slot *_Nonnull slot = &thread->held[count];
    atomic_store_explicit(&slot->resource, resource, memory_order_relaxed);
    atomic_store_explicit(&slot->file, (uintptr_t)file, memory_order_relaxed);
    atomic_store_explicit(&slot->fileCount, fileCount, memory_order_relaxed);
    atomic_store_explicit(&slot->line, line, memory_order_relaxed);
    atomic_store_explicit(&thread->heldCount, count + 1, memory_order_relaxed);
    atomic_store_explicit(&thread->heldSequence, sequence + 2, memory_order_release);
}

/// Records that the calling thread no longer holds `resource` (the latest record of it, if it holds it twice).
static inline void ck_wait_unhold(uintptr_t resource) {
    ck_wait_thread *_Nullable thread = ck_wait_current;
    if (thread == NULL) {
        return;
    }
    if (thread->heldOverflow > 0) {
        // The newest holds were only counted; one of them ends first.
        thread->heldOverflow -= 1;
        return;
    }
    intptr_t count = atomic_load_explicit(&thread->heldCount, memory_order_relaxed);
    for (intptr_t index = count - 1; index >= 0; index--) {
        if (atomic_load_explicit(&thread->held[index].resource, memory_order_relaxed) != resource) {
            continue;
        }
        uint64_t sequence = atomic_load_explicit(&thread->heldSequence, memory_order_relaxed);
        atomic_store_explicit(&thread->heldSequence, sequence + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        for (intptr_t later = index + 1; later < count; later++) {
            ck_held_slot *_Nonnull to = &thread->held[later - 1];
            ck_held_slot *_Nonnull from = &thread->held[later];
            atomic_store_explicit(&to->resource, atomic_load_explicit(&from->resource, memory_order_relaxed),
                                  memory_order_relaxed);
            atomic_store_explicit(&to->file, atomic_load_explicit(&from->file, memory_order_relaxed),
                                  memory_order_relaxed);
            atomic_store_explicit(&to->fileCount, atomic_load_explicit(&from->fileCount, memory_order_relaxed),
                                  memory_order_relaxed);
            atomic_store_explicit(&to->line, atomic_load_explicit(&from->line, memory_order_relaxed),
                                  memory_order_relaxed);
        }
        atomic_store_explicit(&thread->heldCount, count - 1, memory_order_relaxed);
        atomic_store_explicit(&thread->heldSequence, sequence + 2, memory_order_release);
        return;
    }
}


/// What a report is shown of one thread, for the time of one call: its wait (null if it waits for nothing), whose
/// `object` is alive until the call returns, and the resources it holds, oldest first.
typedef void (*ck_wait_visitor)(
    void *_Nullable context,
    uintptr_t thread,
    uint64_t kernelThread,
    const ck_wait_entry *_Nullable wait,
    const ck_wait_held *_Nonnull held,
    intptr_t heldCount
);

/// Shows `visitor` every thread that has waited or held a recorded resource and has not exited, one at a time. No
/// thread waits for the report, except that a thread ending its wait waits for the visit of its own record to end.
void ck_wait_visit(void *_Nullable context, ck_wait_visitor _Nonnull visitor);

/// Writes the name of the thread with the kernel ID `kernelThread` into `buffer`; false if it has none, it has exited,
/// or the platform does not say.
bool ck_wait_thread_name(uint64_t kernelThread, char *_Nonnull buffer, size_t size);

/// The calling thread's ID in the wait records: `pthread_self()`.
uintptr_t ck_wait_thread_id(void);

#endif
