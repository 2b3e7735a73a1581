// `_GNU_SOURCE` for `syscall`, which glibc and musl declare only with it (or in their default GNU dialect).
#define _GNU_SOURCE
#include "ConcurrencyKitCShims.h"

#if defined(__linux__)
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

// The futex operations by number: musl ships no <linux/futex.h>. Private: the word is never shared between
// processes, so the kernel may key the wait by address alone.
enum { ck_futex_wait_private = 0 | 128, ck_futex_wake_private = 1 | 128 };

// 32-bit targets whose only futex call takes a 64-bit time name it `SYS_futex_time64`; no timeout is passed here.
#if !defined(SYS_futex) && defined(SYS_futex_time64)
#define SYS_futex SYS_futex_time64
#endif

int ck_futex_wait(void *word, uint32_t expected) {
    if (syscall(SYS_futex, word, ck_futex_wait_private, expected, NULL, NULL, 0) == 0) return 0;
    // EAGAIN (the word changed first) and EINTR are ordinary: the caller looks at the word again either way.
    return errno == EAGAIN || errno == EINTR ? 0 : errno;
}

void ck_futex_wake_one(void *word) {
    // Errors are ignored, as glibc's `lll_unlock` ignores them: nobody can be asleep on a word a wake cannot reach.
    syscall(SYS_futex, word, ck_futex_wake_private, 1, NULL, NULL, 0);
}
#endif
