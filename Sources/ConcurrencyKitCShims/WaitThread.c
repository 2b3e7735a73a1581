#define _GNU_SOURCE
#include "ConcurrencyKitCShims.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

/// How many held resources a thread's record keeps; more are counted, not kept, so that releases still balance.
#define CK_HELD_SLOTS 16

/// One held resource, in fields a report may read while the owner writes them.
typedef struct {
    _Atomic uintptr_t resource;
    _Atomic(const uint8_t *) file;
    _Atomic intptr_t fileCount;
    _Atomic uintptr_t line;
} ck_held_slot;

/// One thread's records, linked into the process's list from its first use until the thread exits.
typedef struct ck_wait_thread {
    struct ck_wait_thread *previous;
    struct ck_wait_thread *next;
    uintptr_t thread;
    uint64_t kernelThread;

    /// Whether `wait` holds a wait; written by the owner, read by a report.
    _Atomic int active;
    /// Whether a report reads `wait` now: the owner does not end its wait until it is clear.
    _Atomic int pinned;
    _Atomic uintptr_t kind;
    _Atomic(const void *) object;
    _Atomic(const uint8_t *) api;
    _Atomic intptr_t apiCount;
    _Atomic(const uint8_t *) file;
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

static _Thread_local ck_wait_thread *ck_wait_current;
static pthread_key_t ck_wait_key;
static pthread_once_t ck_wait_key_once = PTHREAD_ONCE_INIT;
/// Guards the list, and keeps every record in it alive while a report visits it.
static pthread_mutex_t ck_wait_list_lock = PTHREAD_MUTEX_INITIALIZER;
static ck_wait_thread *ck_wait_list;

static void ck_wait_free_thread(void *value) {
    ck_wait_thread *thread = value;
    if (ck_wait_current == thread) {
        ck_wait_current = NULL;
    }
    pthread_mutex_lock(&ck_wait_list_lock);
    if (thread->previous != NULL) {
        thread->previous->next = thread->next;
    } else {
        ck_wait_list = thread->next;
    }
    if (thread->next != NULL) {
        thread->next->previous = thread->previous;
    }
    pthread_mutex_unlock(&ck_wait_list_lock);
    free(thread);
}

static void ck_wait_make_key(void) {
    pthread_key_create(&ck_wait_key, ck_wait_free_thread);
}

bool ck_wait_thread_name(uint64_t kernelThread, char *buffer, size_t size) {
#if defined(__linux__)
    // By the kernel's ID, from /proc: a thread that has exited has no entry, where its `pthread_t` could be reused.
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%llu/comm", (unsigned long long)kernelThread);
    int file = open(path, O_RDONLY | O_CLOEXEC);
    if (file < 0) {
        return false;
    }
    ssize_t count = read(file, buffer, size - 1);
    close(file);
    if (count <= 0) {
        return false;
    }
    buffer[count] = 0;
    if (buffer[count - 1] == '\n') {
        buffer[count - 1] = 0;
    }
    return buffer[0] != 0;
#else
    (void)kernelThread;
    (void)buffer;
    (void)size;
    return false;
#endif
}

uintptr_t ck_wait_thread_id(void) {
    return (uintptr_t)pthread_self();
}

static ck_wait_thread *ck_wait_make_thread(void) {
    pthread_once(&ck_wait_key_once, ck_wait_make_key);
    ck_wait_thread *thread = calloc(1, sizeof(ck_wait_thread));
    if (thread == NULL) {
        abort();
    }
    thread->thread = ck_wait_thread_id();
#if defined(__linux__)
    thread->kernelThread = (uint64_t)syscall(SYS_gettid);
#endif
    // The key's destructor unlinks and frees the record when the thread exits.
    pthread_setspecific(ck_wait_key, thread);
    pthread_mutex_lock(&ck_wait_list_lock);
    thread->next = ck_wait_list;
    if (ck_wait_list != NULL) {
        ck_wait_list->previous = thread;
    }
    ck_wait_list = thread;
    pthread_mutex_unlock(&ck_wait_list_lock);
    ck_wait_current = thread;
    return thread;
}

static inline ck_wait_thread *ck_wait_self(void) {
    ck_wait_thread *thread = ck_wait_current;
    return thread != NULL ? thread : ck_wait_make_thread();
}

void ck_wait_begin(const ck_wait_entry *entry) {
    ck_wait_thread *thread = ck_wait_self();
    atomic_store_explicit(&thread->kind, entry->kind, memory_order_relaxed);
    atomic_store_explicit(&thread->object, entry->object, memory_order_relaxed);
    atomic_store_explicit(&thread->api, entry->api, memory_order_relaxed);
    atomic_store_explicit(&thread->apiCount, entry->apiCount, memory_order_relaxed);
    atomic_store_explicit(&thread->file, entry->file, memory_order_relaxed);
    atomic_store_explicit(&thread->fileCount, entry->fileCount, memory_order_relaxed);
    atomic_store_explicit(&thread->line, entry->line, memory_order_relaxed);
    atomic_store_explicit(&thread->since, entry->since, memory_order_relaxed);
    // Publishes the fields: a report that sees `active` sees them.
    atomic_store_explicit(&thread->active, 1, memory_order_release);
}

void ck_wait_end(void) {
    ck_wait_thread *thread = ck_wait_current;
    if (thread == NULL) {
        return;
    }
    // With the report's pin, a Dekker pair in one total order: either the report sees the wait ended and reads
    // nothing, or this thread sees the pin and waits until the report has read the wait, whose object it keeps alive.
    atomic_store_explicit(&thread->active, 0, memory_order_seq_cst);
    while (atomic_load_explicit(&thread->pinned, memory_order_seq_cst) != 0) {
        sched_yield();
    }
}

void ck_wait_hold(uintptr_t resource, const uint8_t *file, intptr_t fileCount, uintptr_t line) {
    ck_wait_thread *thread = ck_wait_self();
    intptr_t count = atomic_load_explicit(&thread->heldCount, memory_order_relaxed);
    if (count == CK_HELD_SLOTS) {
        thread->heldOverflow += 1;
        return;
    }
    uint64_t sequence = atomic_load_explicit(&thread->heldSequence, memory_order_relaxed);
    atomic_store_explicit(&thread->heldSequence, sequence + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    ck_held_slot *slot = &thread->held[count];
    atomic_store_explicit(&slot->resource, resource, memory_order_relaxed);
    atomic_store_explicit(&slot->file, file, memory_order_relaxed);
    atomic_store_explicit(&slot->fileCount, fileCount, memory_order_relaxed);
    atomic_store_explicit(&slot->line, line, memory_order_relaxed);
    atomic_store_explicit(&thread->heldCount, count + 1, memory_order_relaxed);
    atomic_store_explicit(&thread->heldSequence, sequence + 2, memory_order_release);
}

void ck_wait_unhold(uintptr_t resource) {
    ck_wait_thread *thread = ck_wait_current;
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
            ck_held_slot *to = &thread->held[later - 1];
            ck_held_slot *from = &thread->held[later];
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

/// Copies `thread`'s held resources as of one moment into `held`; returns how many.
static intptr_t ck_wait_copy_held(ck_wait_thread *thread, ck_wait_held *held) {
    while (1) {
        uint64_t before = atomic_load_explicit(&thread->heldSequence, memory_order_acquire);
        if ((before & 1) != 0) {
            sched_yield();
            continue;
        }
        intptr_t count = atomic_load_explicit(&thread->heldCount, memory_order_relaxed);
        for (intptr_t index = 0; index < count; index++) {
            ck_held_slot *slot = &thread->held[index];
            held[index].resource = atomic_load_explicit(&slot->resource, memory_order_relaxed);
            held[index].file = atomic_load_explicit(&slot->file, memory_order_relaxed);
            held[index].fileCount = atomic_load_explicit(&slot->fileCount, memory_order_relaxed);
            held[index].line = atomic_load_explicit(&slot->line, memory_order_relaxed);
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&thread->heldSequence, memory_order_relaxed) == before) {
            return count;
        }
    }
}

void ck_wait_visit(void *context, ck_wait_visitor visitor) {
    pthread_mutex_lock(&ck_wait_list_lock);
    for (ck_wait_thread *thread = ck_wait_list; thread != NULL; thread = thread->next) {
        ck_wait_held held[CK_HELD_SLOTS];
        intptr_t heldCount = ck_wait_copy_held(thread, held);
        atomic_store_explicit(&thread->pinned, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&thread->active, memory_order_seq_cst) != 0) {
            ck_wait_entry wait = {
                .kind = atomic_load_explicit(&thread->kind, memory_order_relaxed),
                .object = atomic_load_explicit(&thread->object, memory_order_relaxed),
                .api = atomic_load_explicit(&thread->api, memory_order_relaxed),
                .apiCount = atomic_load_explicit(&thread->apiCount, memory_order_relaxed),
                .file = atomic_load_explicit(&thread->file, memory_order_relaxed),
                .fileCount = atomic_load_explicit(&thread->fileCount, memory_order_relaxed),
                .line = atomic_load_explicit(&thread->line, memory_order_relaxed),
                .since = atomic_load_explicit(&thread->since, memory_order_relaxed),
            };
            visitor(context, thread->thread, thread->kernelThread, &wait, held, heldCount);
        } else if (heldCount > 0) {
            visitor(context, thread->thread, thread->kernelThread, NULL, held, heldCount);
        }
        atomic_store_explicit(&thread->pinned, 0, memory_order_release);
    }
    pthread_mutex_unlock(&ck_wait_list_lock);
}
