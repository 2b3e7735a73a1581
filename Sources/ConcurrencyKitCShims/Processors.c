// `_GNU_SOURCE` for `sched_getaffinity` and the `CPU_*` macros, which glibc and musl declare only with it.
#define _GNU_SOURCE
#include "ConcurrencyKitCShims.h"

#include <unistd.h>
#if defined(__linux__)
#include <errno.h>
#include <sched.h>
#endif

long ck_usable_processor_count(void) {
#if defined(__linux__)
    // The main thread's mask (its thread ID is the process ID), so that every thread reads the same count; a set
    // as large as the kernel's, which fails with EINVAL while it is too small for the kernel's CPU numbers.
    for (int cpus = CPU_SETSIZE; cpus <= (1 << 16); cpus *= 2) {
        cpu_set_t *set = CPU_ALLOC(cpus);
        if (set == NULL) break;
        size_t size = CPU_ALLOC_SIZE(cpus);
        int result = sched_getaffinity(getpid(), size, set);
        int count = result == 0 ? CPU_COUNT_S(size, set) : 0;
        int error = errno;
        CPU_FREE(set);
        if (result == 0) {
            if (count > 0) return count;
            break;
        }
        if (error != EINVAL) break;
    }
#endif
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? online : 1;
}
