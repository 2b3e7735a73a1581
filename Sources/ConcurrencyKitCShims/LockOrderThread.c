#include "ConcurrencyKitCShims.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/// The edge cache's size, a power of two: a direct-mapped set of orders the thread has seen.
#define CK_CACHE_SLOTS 256

typedef struct {
    uint64_t from;
    uint64_t to;
} ck_edge;

struct ck_lock_order_thread {
    ck_lock_order_held *held;
    intptr_t count;
    intptr_t capacity;
    uint64_t epoch;
    /// The value of `ck_orphans` when the thread last looked for its orphans; 0 at first, so that a new thread looks
    /// once: it may have the ID of an exited thread whose orphans are still kept.
    uint64_t orphansSeen;
    ck_edge known[CK_CACHE_SLOTS];
};

/// How many locks were destroyed while another thread held them: a thread that last looked at another value may
/// hold one of them.
static _Atomic uint64_t ck_orphans;

static _Thread_local ck_lock_order_thread *ck_current;
static pthread_key_t ck_key;
static pthread_once_t ck_key_once = PTHREAD_ONCE_INIT;

static void ck_free_thread(void *value) {
    ck_lock_order_thread *thread = value;
    if (ck_current == thread) {
        ck_current = NULL;
    }
    free(thread->held);
    free(thread);
}

static void ck_make_key(void) {
    if (pthread_key_create(&ck_key, ck_free_thread) != 0) {
        abort();
    }
}

static void *ck_allocate(size_t size) {
    void *memory = malloc(size);
    if (memory == NULL) {
        abort();
    }
    return memory;
}

static ck_lock_order_thread *ck_make_thread(uint64_t epoch) {
    pthread_once(&ck_key_once, ck_make_key);
    ck_lock_order_thread *thread = ck_allocate(sizeof(ck_lock_order_thread));
    memset(thread, 0, sizeof(ck_lock_order_thread));
    thread->capacity = 8;
    thread->held = ck_allocate(sizeof(ck_lock_order_held) * (size_t)thread->capacity);
    thread->epoch = epoch;
    // The key's destructor frees the records when the thread exits.
    pthread_setspecific(ck_key, thread);
    ck_current = thread;
    return thread;
}

ck_lock_order_thread *ck_lock_order_current(uint64_t epoch) {
    ck_lock_order_thread *thread = ck_current;
    if (thread == NULL) {
        return ck_make_thread(epoch);
    }
    if (thread->epoch != epoch) {
        thread->count = 0;
        thread->epoch = epoch;
    }
    return thread;
}

intptr_t ck_lock_order_count(const ck_lock_order_thread *thread) {
    return thread->count;
}

const ck_lock_order_held *ck_lock_order_held_at(const ck_lock_order_thread *thread, intptr_t index) {
    return &thread->held[index];
}

/// The slot of the order `from`, then `to`: both serial numbers are mixed into the top bits, so that serials a
/// multiple of the cache's size apart (they are handed out in sequence) do not share a slot.
static inline ck_edge *ck_slot(const ck_lock_order_thread *thread, uint64_t from, uint64_t to) {
    uint64_t mixed = (from * 0x9E3779B97F4A7C15ull) ^ (to * 0xBF58476D1CE4E5B9ull);
    mixed ^= mixed >> 29;
    mixed *= 0x94D049BB133111EBull;
    return (ck_edge *)&thread->known[mixed >> 56];
}

bool ck_lock_order_all_known(const ck_lock_order_thread *thread, uint64_t serial, const void *peers) {
    for (intptr_t index = 0; index < thread->count; index++) {
        const ck_lock_order_held *held = &thread->held[index];
        if (held->serial == serial) {
            continue;
        }
        if (peers != NULL && held->peers == peers) {
            return false;
        }
        const ck_edge *slot = ck_slot(thread, held->serial, serial);
        if (slot->from != held->serial || slot->to != serial) {
            return false;
        }
    }
    return true;
}

bool ck_lock_order_remember(ck_lock_order_thread *thread, uint64_t from, uint64_t to) {
    ck_edge *slot = ck_slot(thread, from, to);
    if (slot->from == from && slot->to == to) {
        return false;
    }
    slot->from = from;
    slot->to = to;
    return true;
}

void ck_lock_order_push(
    ck_lock_order_thread *thread,
    uint64_t serial,
    const void *node,
    const void *peers,
    const uint8_t *file,
    intptr_t fileCount,
    uintptr_t line
) {
    if (thread->count == thread->capacity) {
        thread->capacity *= 2;
        ck_lock_order_held *larger = realloc(thread->held, sizeof(ck_lock_order_held) * (size_t)thread->capacity);
        if (larger == NULL) {
            abort();
        }
        thread->held = larger;
    }
    ck_lock_order_held *entry = &thread->held[thread->count];
    entry->serial = serial;
    entry->node = node;
    entry->peers = peers;
    entry->file = file;
    entry->fileCount = fileCount;
    entry->line = line;
    thread->count += 1;
}

bool ck_lock_order_acquire(
    uint64_t epoch,
    uint64_t serial,
    const void *node,
    const void *peers,
    const uint8_t *file,
    intptr_t fileCount,
    uintptr_t line
) {
    ck_lock_order_thread *thread = ck_lock_order_current(epoch);
    if (thread->orphansSeen != atomic_load_explicit(&ck_orphans, memory_order_relaxed)) {
        return false;
    }
    if (thread->count > 0 && !ck_lock_order_all_known(thread, serial, peers)) {
        return false;
    }
    ck_lock_order_push(thread, serial, node, peers, file, fileCount, line);
    return true;
}

void ck_lock_order_release(uint64_t serial) {
    ck_lock_order_thread *thread = ck_current;
    if (thread == NULL) {
        return;
    }
    intptr_t count = thread->count;
    for (intptr_t index = count - 1; index >= 0; index--) {
        if (thread->held[index].serial == serial) {
            memmove(&thread->held[index], &thread->held[index + 1],
                    sizeof(ck_lock_order_held) * (size_t)(count - index - 1));
            thread->count = count - 1;
            return;
        }
    }
}

bool ck_lock_order_holds(uint64_t serial) {
    const ck_lock_order_thread *thread = ck_current;
    if (thread == NULL) {
        return false;
    }
    for (intptr_t index = 0; index < thread->count; index++) {
        if (thread->held[index].serial == serial) {
            return true;
        }
    }
    return false;
}

void ck_lock_order_orphaned(void) {
    atomic_fetch_add_explicit(&ck_orphans, 1, memory_order_acq_rel);
}

bool ck_lock_order_orphans_seen(ck_lock_order_thread *thread) {
    uint64_t orphans = atomic_load_explicit(&ck_orphans, memory_order_acquire);
    if (thread->orphansSeen == orphans) {
        return true;
    }
    thread->orphansSeen = orphans;
    return false;
}
