#define _GNU_SOURCE
#include "ConcurrencyKitCShims.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

/// One thread's record, linked into the process's list from its first wait until the thread exits.
typedef struct ck_wait_thread {
    struct ck_wait_thread *previous;
    struct ck_wait_thread *next;
    uintptr_t thread;
    uint64_t kernelThread;
    /// Whether the fields below hold a wait; written by the owner, read by a report.
    _Atomic int active;
    /// Whether a report reads the wait now: the owner does not end its wait until it is clear.
    _Atomic int pinned;
    _Atomic uintptr_t object;
    _Atomic uintptr_t api;
    _Atomic intptr_t apiCount;
    _Atomic uintptr_t file;
    _Atomic intptr_t fileCount;
    _Atomic uintptr_t line;
    _Atomic uint64_t since;
} ck_wait_thread;

#if defined(__GLIBC__)
// Initial-exec: read at a fixed offset from the thread pointer, not through `__tls_get_addr`, which a position-
// independent build would call on every wait. One pointer fits the static TLS that glibc keeps for libraries loaded
// later too. (Other loaders, Android's among them, refuse it in a library loaded later.)
static _Thread_local ck_wait_thread *ck_wait_current __attribute__((tls_model("initial-exec")));
#else
static _Thread_local ck_wait_thread *ck_wait_current;
#endif
static pthread_key_t ck_wait_key;
static pthread_once_t ck_wait_key_once = PTHREAD_ONCE_INIT;
/// Guards the list's links, and keeps every record in it alive while a report visits it. A visit holds it only to
/// copy each waiting thread's fields: a thread's first wait, and its exit, wait at most that long.
static pthread_mutex_t ck_wait_list_lock = PTHREAD_MUTEX_INITIALIZER;
static ck_wait_thread *ck_wait_list;
/// One report at a time: a pin is a flag, not a count.
static pthread_mutex_t ck_wait_report_lock = PTHREAD_MUTEX_INITIALIZER;

int ck_wait_syncs_recorded;

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

uintptr_t ck_thread_self_call(void) {
    return (uintptr_t)pthread_self();
}

static ck_wait_thread *ck_wait_make_thread(void) {
    pthread_once(&ck_wait_key_once, ck_wait_make_key);
    ck_wait_thread *thread = calloc(1, sizeof(ck_wait_thread));
    if (thread == NULL) {
        abort();
    }
    thread->thread = (uintptr_t)pthread_self();
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

/// Now, on the clock `DispatchTime.uptimeNanoseconds` reads, coarsely: a few nanoseconds where a precise read costs
/// tens, at most a tick (a few milliseconds) behind. Linux's Dispatch reads `CLOCK_MONOTONIC`; Darwin's reads the
/// uptime, which stops while the machine sleeps, where Darwin's `CLOCK_MONOTONIC` does not.
static uint64_t ck_wait_coarse_now(void) {
#if defined(__APPLE__)
    return clock_gettime_nsec_np(CLOCK_UPTIME_RAW_APPROX);
#else
    struct timespec now;
#if defined(CLOCK_MONOTONIC_COARSE)
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
#else
    clock_gettime(CLOCK_MONOTONIC, &now);
#endif
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
#endif
}

void *ck_wait_begin(const ck_wait_entry *entry) {
    ck_wait_thread *thread = ck_wait_current;
    if (thread == NULL) {
        thread = ck_wait_make_thread();
    }
    uint64_t since = entry->since != 0 ? entry->since : ck_wait_coarse_now();
    atomic_store_explicit(&thread->object, (uintptr_t)entry->object, memory_order_relaxed);
    atomic_store_explicit(&thread->api, (uintptr_t)entry->api, memory_order_relaxed);
    atomic_store_explicit(&thread->apiCount, entry->apiCount, memory_order_relaxed);
    atomic_store_explicit(&thread->file, (uintptr_t)entry->file, memory_order_relaxed);
    atomic_store_explicit(&thread->fileCount, entry->fileCount, memory_order_relaxed);
    atomic_store_explicit(&thread->line, entry->line, memory_order_relaxed);
    atomic_store_explicit(&thread->since, since, memory_order_relaxed);
    // Publishes the fields: a report that sees `active` sees them.
    atomic_store_explicit(&thread->active, 1, memory_order_release);
    return thread;
}

void ck_wait_end(void) {
    ck_wait_thread *thread = ck_wait_current;
    if (thread == NULL) {
        return;
    }
    ck_wait_end_of(thread);
}

void ck_wait_end_of(void *record) {
    ck_wait_thread *thread = record;
    // With the report's pin, a Dekker pair in one total order: either the report sees the wait ended and reads
    // nothing, or this thread sees the pin and waits until the report has copied the wait and retained its object.
    atomic_store_explicit(&thread->active, 0, memory_order_seq_cst);
    while (atomic_load_explicit(&thread->pinned, memory_order_seq_cst) != 0) {
        sched_yield();
    }
}

void ck_wait_visit(void *context, ck_wait_visitor visitor) {
    pthread_mutex_lock(&ck_wait_report_lock);
    pthread_mutex_lock(&ck_wait_list_lock);
    for (ck_wait_thread *thread = ck_wait_list; thread != NULL; thread = thread->next) {
        if (atomic_load_explicit(&thread->active, memory_order_relaxed) == 0) {
            continue;
        }
        atomic_store_explicit(&thread->pinned, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&thread->active, memory_order_seq_cst) != 0) {
            ck_wait_entry wait = {
                .object = (const void *)atomic_load_explicit(&thread->object, memory_order_relaxed),
                .api = (const uint8_t *)atomic_load_explicit(&thread->api, memory_order_relaxed),
                .apiCount = atomic_load_explicit(&thread->apiCount, memory_order_relaxed),
                .file = (const uint8_t *)atomic_load_explicit(&thread->file, memory_order_relaxed),
                .fileCount = atomic_load_explicit(&thread->fileCount, memory_order_relaxed),
                .line = atomic_load_explicit(&thread->line, memory_order_relaxed),
                .since = atomic_load_explicit(&thread->since, memory_order_relaxed),
            };
            visitor(context, thread->thread, thread->kernelThread, &wait);
        }
        atomic_store_explicit(&thread->pinned, 0, memory_order_release);
    }
    pthread_mutex_unlock(&ck_wait_list_lock);
    pthread_mutex_unlock(&ck_wait_report_lock);
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
