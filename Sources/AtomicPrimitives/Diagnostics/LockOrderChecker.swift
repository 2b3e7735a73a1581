#if DEBUG
internal import ConcurrencyKitCShims
#endif

/// The hooks through which blocking acquisitions join the lock-order graph, for resources that are not built on
/// ``LockCore`` (which joins by itself).
///
/// Call ``willAcquire(_:file:line:)`` before a blocking acquisition starts to wait — a `QueueSafeValue`'s `wait`
/// turn, `GCDQueue.sync` onto a queue — then ``didAcquire(_:file:line:)`` once the resource is held, and
/// ``didRelease(_:)`` when it is given back (in any order). A try-acquisition that succeeded calls only
/// `didAcquire`: it cannot block, so it adds no edge, but while held it counts like any lock.
///
/// Every hook is inlined to nothing in release builds, and costs one atomic load when the checker is off.
@usableFromInline
package enum LockOrderChecker {
    /// Records that the calling thread is about to wait for `resource`, and reports a cycle this closes.
    ///
    /// The report is made before the thread blocks, so a deadlock is reported even in the run where it happens.
    /// - Parameters:
    ///   - resource: The resource being acquired.
    ///   - file: The acquisition's file, for the report.
    ///   - line: The acquisition's line, for the report; 0 to show `file` as an entry point's name.
    @inlinable
    package static func willAcquire(
        _ resource: LockOrderIdentity,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        #if DEBUG
        Self.willAcquire(resource.key, file: file, line: line)
        #endif
    }

    /// Records that the calling thread now holds `resource`.
    ///
    /// - Parameters:
    ///   - resource: The resource now held.
    ///   - file: Where it was acquired.
    ///   - line: Where it was acquired.
    @inlinable
    package static func didAcquire(
        _ resource: LockOrderIdentity,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        #if DEBUG
        Self.didAcquire(resource.key, file: file, line: line)
        #endif
    }

    /// Records that the calling thread no longer holds `resource`.
    ///
    /// - Parameter resource: The resource given back. Nothing happens if the thread did not hold it.
    @inlinable
    package static func didRelease(_ resource: LockOrderIdentity) {
        #if DEBUG
        if LockOrderChecking.isOn {
            Self.didRelease(resource.key.serial)
        }
        #endif
    }

    /// Whether the calling thread holds `resource`, by the checker's records: `false` whenever the checker is off.
    package static func isHeld(_ resource: LockOrderIdentity) -> Bool {
        #if DEBUG
        LockOrderChecking.isOn && LockOrderThread.holds(resource.key.serial)
        #else
        false
        #endif
    }

    /// Whether the graph has a node for the resource with this serial number.
    ///
    /// For tests that check destroyed resources leave the graph. Always `false` in release builds.
    /// - Parameter serial: A ``LockOrderIdentity/serial`` or `MutexLock.lockOrderSerial`.
    /// - Returns: Whether that resource is in the graph now.
    package static func graphContains(serial: UInt64) -> Bool {
        #if DEBUG
        LockOrderGraph.shared.contains(serial)
        #else
        false
        #endif
    }

    /// How many records of destroyed locks the checker keeps, for threads that held those locks as they were
    /// destroyed by another thread: 0 in release builds.
    ///
    /// For tests that check the checker's memory stays flat: a holder drops such a record at its next checked
    /// acquisition, or as it exits.
    package static var orphanCount: Int {
        #if DEBUG
        LockOrderNode.orphanCount
        #else
        0
        #endif
    }

    /// How many locks the calling thread holds by the checker's records: 0 whenever the checker is off.
    package static var heldCount: Int {
        #if DEBUG
        let switches = DiagnosticSwitches.flags.load(ordering: .relaxed)
        guard switches & 1 != 0 else { return 0 }  // the checker's bit
        return ck_lock_order_count(ck_lock_order_current(switches >> 2))
        #else
        0
        #endif
    }

    #if DEBUG
    @usableFromInline
    static func willAcquire(_ key: LockOrderKey, file: StaticString, line: UInt) {
        let switches = DiagnosticSwitches.flags.load(ordering: .relaxed)
        guard switches & 1 != 0 else { return }  // the checker's bit
        LockOrderThread.acquire(key, file: file, line: line, epoch: switches >> 2, push: false)
    }

    @usableFromInline
    static func didAcquire(_ key: LockOrderKey, file: StaticString, line: UInt) {
        let switches = DiagnosticSwitches.flags.load(ordering: .relaxed)
        guard switches & 1 != 0 else { return }  // the checker's bit
        // A try-acquisition cannot block, so it adds no order: no check, only the record.
        LockOrderThread.push(key, file: file, line: line, on: ck_lock_order_current(switches >> 2))
    }

    /// ``LockCore``'s acquisition, before it blocks: checks the orders from the locks the thread holds and records
    /// the lock as held, then is a chaos point.
    ///
    /// Recording before the mutex is taken is exact: the thread does nothing else until it holds it, and one record
    /// lookup serves both steps. An order the thread has seen before costs one call into the C records.
    @usableFromInline
    static func lockWillAcquire(_ key: LockOrderKey, file: StaticString, line: UInt) {
        let switches = DiagnosticSwitches.flags.load(ordering: .relaxed)
        if switches & 1 != 0  // the checker's bit
            && !ck_lock_order_acquire(
                switches >> 2,
                key.serial,
                key.node.toOpaque(),
                key.peers,
                file.utf8Start,
                file.utf8CodeUnitCount,
                line
            )
        {
            LockOrderThread.acquire(key, file: file, line: line, epoch: switches >> 2, push: true)
        }
        if switches & 2 != 0 {  // the chaos bit
            ScheduleChaos.step(.lockAcquire)
        }
    }

    /// ``LockCore``'s release, before the mutex is unlocked: the lock leaves the thread's records.
    @usableFromInline
    static func lockWillRelease(_ serial: UInt64) {
        if DiagnosticSwitches.flags.load(ordering: .relaxed) & 1 != 0 {  // the checker's bit
            ck_lock_order_release(serial)
        }
    }

    /// ``LockCore``'s release, done: a chaos point.
    @usableFromInline
    static func lockDidRelease() {
        if DiagnosticSwitches.flags.load(ordering: .relaxed) & 2 != 0 {  // the chaos bit
            ScheduleChaos.step(.lockRelease)
        }
    }

    @usableFromInline
    static func didRelease(_ serial: UInt64) {
        ck_lock_order_release(serial)
    }
    #endif
}
