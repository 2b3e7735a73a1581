// `_GNU_SOURCE` for `sched_getaffinity` and `CPU_COUNT`, which glibc and musl declare only with it.
#define _GNU_SOURCE
#include "ConcurrencyKitCShims.h"

#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#endif

long ck_usable_processor_count(void) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int count = CPU_COUNT(&set);
        if (count > 0) return count;
    }
#endif
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? online : 1;
}
