// Public for `ck_thread_self()` and `ck_thread_self_call()`, inlined into clients with `currentThreadID()`.
public import ConcurrencyKitCShims
import Dispatch

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#else
#error("AtomicPrimitives could not identify your C library.")
#endif

// The only file of ConcurrencyKit that imports the C library. Everything else that needs it goes through the small
// `package` wrappers below, so the import ladder and the platform differences are written once.

/// The C library's mutex type: ``ConditionCore``'s, and ``RawMutex``'s except on Linux.
@usableFromInline
package typealias CMutex = pthread_mutex_t

/// The C library's condition variable type, for storage that ``ConditionCore`` allocates.
@usableFromInline
package typealias CCondition = pthread_cond_t

/// The C library's thread-specific key type, for ``ThreadFrameStack`` and the diagnostics' per-thread state.
@usableFromInline
package typealias CThreadKey = pthread_key_t

/// Thin wrappers over the C library calls that ConcurrencyKit makes.
///
/// The mutex calls are `@inlinable` and always inlined: where ``RawMutex`` is a `pthread_mutex_t`, the optimized lock
/// path is exactly the C call it wraps.
@usableFromInline
package enum CLibrary {
    /// The error a try-lock returns when the mutex is taken (for ``RawMutex`` off Linux).
    @inlinable
    package static var busy: Int32 { EBUSY }

    /// The error a timed wait returns when its deadline passed.
    @inlinable
    package static var timedOut: Int32 { ETIMEDOUT }

    /// `pthread_mutex_init` with default attributes.
    @inlinable
    @inline(__always)
    package static func initialize(_ mutex: UnsafeMutablePointer<CMutex>) -> Int32 {
        pthread_mutex_init(mutex, nil)
    }

    /// `pthread_mutex_destroy`.
    @inlinable
    @inline(__always)
    package static func destroy(_ mutex: UnsafeMutablePointer<CMutex>) -> Int32 {
        pthread_mutex_destroy(mutex)
    }

    /// `pthread_mutex_lock`.
    @inlinable
    @inline(__always)
    package static func lock(_ mutex: UnsafeMutablePointer<CMutex>) -> Int32 {
        pthread_mutex_lock(mutex)
    }

    /// `pthread_mutex_trylock` (for ``RawMutex`` off Linux).
    @inlinable
    @inline(__always)
    package static func tryLock(_ mutex: UnsafeMutablePointer<CMutex>) -> Int32 {
        pthread_mutex_trylock(mutex)
    }

    /// `pthread_mutex_unlock`.
    @inlinable
    @inline(__always)
    package static func unlock(_ mutex: UnsafeMutablePointer<CMutex>) -> Int32 {
        pthread_mutex_unlock(mutex)
    }

    /// `pthread_cond_init`, timed against the monotonic clock where the platform allows it.
    package static func initialize(_ condition: UnsafeMutablePointer<CCondition>) -> Int32 {
        #if canImport(Darwin)
        return pthread_cond_init(condition, nil)
        #else
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        defer { pthread_condattr_destroy(&attributes) }
        let clock = pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        guarantee(clock == 0, "pthread_condattr_setclock failed with error \(clock)")
        return pthread_cond_init(condition, &attributes)
        #endif
    }

    /// `pthread_cond_destroy`.
    package static func destroy(_ condition: UnsafeMutablePointer<CCondition>) -> Int32 {
        pthread_cond_destroy(condition)
    }

    /// `pthread_cond_signal`.
    package static func signal(_ condition: UnsafeMutablePointer<CCondition>) -> Int32 {
        pthread_cond_signal(condition)
    }

    /// `pthread_cond_wait`.
    package static func wait(
        _ condition: UnsafeMutablePointer<CCondition>,
        releasing mutex: UnsafeMutablePointer<CMutex>
    ) -> Int32 {
        pthread_cond_wait(condition, mutex)
    }

    /// A timed condition wait of at most `nanoseconds`, measured on the monotonic clock: 0, or ``timedOut``.
    package static func wait(
        _ condition: UnsafeMutablePointer<CCondition>,
        releasing mutex: UnsafeMutablePointer<CMutex>,
        forNanoseconds nanoseconds: UInt64
    ) -> Int32 {
        #if canImport(Darwin)
        var relative = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        return pthread_cond_timedwait_relative_np(condition, mutex, &relative)
        #else
        var absolute = timespec()
        clock_gettime(CLOCK_MONOTONIC, &absolute)
        let sum = UInt64(absolute.tv_nsec) + nanoseconds % 1_000_000_000
        absolute.tv_sec += Int(nanoseconds / 1_000_000_000 + sum / 1_000_000_000)
        absolute.tv_nsec = Int(sum % 1_000_000_000)
        return pthread_cond_timedwait(condition, mutex, &absolute)
        #endif
    }

    /// Creates a thread-specific key; `releasesObject`: a thread's non-nil value is a retained object, released
    /// when the thread exits.
    package static func makeThreadKey(releasesObject: Bool) -> CThreadKey {
        var key = pthread_key_t()
        let result: Int32
        if releasesObject {
            result = pthread_key_create(&key) { pointer in
                #if canImport(Darwin)
                Unmanaged<AnyObject>.fromOpaque(pointer).release()
                #else
                if let pointer { Unmanaged<AnyObject>.fromOpaque(pointer).release() }
                #endif
            }
        } else {
            result = pthread_key_create(&key, nil)
        }
        guarantee(result == 0, "pthread_key_create failed with error \(result)")
        return key
    }

    /// The calling thread's value for `key`.
    @_transparent
    @usableFromInline
    package static func threadValue(_ key: CThreadKey) -> UnsafeMutableRawPointer? {
        pthread_getspecific(key)
    }

    /// Sets the calling thread's value for `key`.
    package static func setThreadValue(_ key: CThreadKey, _ value: UnsafeRawPointer?) {
        let result = pthread_setspecific(key, value)
        guarantee(result == 0, "pthread_setspecific failed with error \(result)")
    }

    /// Lets another thread run on this CPU, if one is ready.
    package static func yield() {
        _ = sched_yield()
    }

    /// Sleeps the calling thread for about `microseconds`.
    package static func pause(microseconds: UInt32) {
        _ = usleep(microseconds)
    }

    /// How many processors the process may run on, at least 1: on Linux those of its main thread's affinity mask
    /// (what `taskset` or a container's cpuset leaves it; a CPU quota is not counted), elsewhere those online.
    package static func usableProcessorCount() -> Int {
        max(1, ck_usable_processor_count())
    }

    /// The value of the environment variable `name`, if it is set.
    package static func environmentValue(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Sets the environment variable `name` of this process: for tests that run in a process of their own.
    package static func setEnvironmentValue(_ name: String, _ value: String) {
        let result = setenv(name, value, 1)
        guarantee(result == 0, "setenv failed for \(name)")
    }

    /// Writes `text` and a newline to standard error, unbuffered, in one write where the platform allows.
    package static func writeLineToStandardError(_ text: String) {
        var line = text
        line.append("\n")
        line.withUTF8 { bytes in
            var remaining = UnsafeRawBufferPointer(bytes)
            while !remaining.isEmpty {
                let written = write(2, remaining.baseAddress, remaining.count)
                if written <= 0 { return }
                remaining = UnsafeRawBufferPointer(rebasing: remaining[written...])
            }
        }
    }
}

/// A number that identifies the calling thread, never 0, stable for the thread's lifetime: its `pthread_self()`.
///
/// Read anew at every call, also in an optimized `async` function after an `await` that moved the task to another
/// thread. Calling `pthread_self()` here would not be: glibc declares it `const`, so the optimizer may reuse a value
/// from before the `await` (ThreadIdentityTests shows both in a release build).
@inlinable
package func currentThreadID() -> UInt {
    #if arch(x86_64) && canImport(Glibc)
    // `pthread_self()` without the call: the same number, which the wait records compare.
    ck_thread_self()
    #else
    threadIDFromOutOfLineCall()
    #endif
}

/// The calling thread's `pthread_self()` through `ck_thread_self_call()`, a C function the optimizer cannot see
/// into: ``currentThreadID()`` where `%fs:0x10` is not available, and on every platform for the test that checks
/// that both stay fresh after an `await` (ThreadIdentityTests).
@inlinable
package func threadIDFromOutOfLineCall() -> UInt {
    UInt(ck_thread_self_call())
}

/// Lets another thread run on this CPU, if one is ready: for waiters that watch a word before they sleep.
package func yieldProcessor() {
    CLibrary.yield()
}

/// How many processors the process may run on, at least 1 (see ``CLibrary/usableProcessorCount()``).
package func usableProcessorCount() -> Int {
    CLibrary.usableProcessorCount()
}
