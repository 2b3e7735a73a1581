#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#elseif canImport(Darwin)
import Darwin
#else
#error("AtomicPrimitives could not identify your C library.")
#endif

/// One raw pointer per thread, on a `pthread_key_t`: for per-thread records kept by the modules above.
///
/// The pointer is the caller's to manage; it is not freed when the thread exits. DispatchKit keeps stack frames in
/// it, set and reset around a call.
package final class ThreadLocalPointer: Sendable {
    private let key: pthread_key_t

    package init() {
        var key = pthread_key_t()
        let result = pthread_key_create(&key, nil)
        precondition(result == 0, "pthread_key_create failed with error \(result)")
        self.key = key
    }

    /// The calling thread's pointer; `nil` until it sets one.
    package var value: UnsafeMutableRawPointer? {
        get { pthread_getspecific(self.key) }
        set {
            let result = pthread_setspecific(self.key, newValue)
            precondition(result == 0, "pthread_setspecific failed with error \(result)")
        }
    }
}
