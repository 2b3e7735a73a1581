import AtomicPrimitives

// Eki's sugar for its Semaphore, Mutex and LockedObject, which are AtomicPrimitives' CountingSemaphore, MutexLock and
// AtomicBox.

extension CountingSemaphore {
    /// Runs `block` holding one of `semaphore`'s resources: the same as `semaphore.perform(block)`.
    ///
    /// It blocks the calling thread while it waits, and is unavailable from async code.
    /// - Parameters:
    ///   - semaphore: The semaphore.
    ///   - block: The work.
    /// - Returns: What `block` returns.
    @available(
        *,
        noasync,
        message:
            "semaphore <<< block blocks the calling thread; in async code use `try await semaphore.withPermit { … }` (top-level code with an `await` anywhere is async code too)"
    )
    @discardableResult
    public static func <<< <Result>(semaphore: CountingSemaphore, block: () throws -> Result) rethrows -> Result {
        try semaphore.perform(block)
    }

    /// Takes a resource, waiting for one: the same as `semaphore.wait()`.
    ///
    /// It blocks the calling thread, and is unavailable from async code.
    /// - Parameter semaphore: The semaphore.
    @available(
        *,
        noasync,
        message:
            "semaphore-- blocks the calling thread; in async code use `try await semaphore.acquire()` (top-level code with an `await` anywhere is async code too)"
    )
    public static postfix func -- (semaphore: CountingSemaphore) {
        semaphore.wait()
    }

    /// Gives a resource back: the same as `semaphore.signal()`.
    ///
    /// - Parameter semaphore: The semaphore.
    public static postfix func ++ (semaphore: CountingSemaphore) {
        semaphore.signal()
    }
}

extension MutexLock {
    /// Runs `block` holding `lock`: the same as `lock.withLock(block)`.
    ///
    /// - Parameters:
    ///   - lock: The lock.
    ///   - block: The critical section.
    /// - Returns: What `block` returns.
    @discardableResult
    public static func <<< <Result>(lock: MutexLock, block: () throws -> Result) rethrows -> Result {
        try lock.withLock(block)
    }
}

extension AtomicBox {
    /// Runs `block` on `box`'s value under its lock: the same as `box.mutate(block)`.
    ///
    /// - Parameters:
    ///   - box: The box.
    ///   - block: Gets the value `inout`.
    /// - Returns: What `block` returns.
    @discardableResult
    public static func <<< <Result>(box: AtomicBox, block: (inout Value) throws -> Result) rethrows -> Result {
        try box.mutate(block)
    }
}
