internal import ConcurrencyKitCShims
import Dispatch

/// Where the package's waits record themselves for ``WaitReport``, and where the report reads them back.
///
/// A thread records its wait only once it parks (a semaphore's waiter after it has watched its grant for a while, a
/// lock after `trylock` failed), with a few plain stores into its own record (``ck_wait_begin``); nothing is recorded
/// on an uncontended path. A report reads every thread's record without stopping it: a thread that ends its wait
/// while the report reads that wait waits for the read to end, a few stores' time, so that the target the report
/// looks at stays alive.
package enum WaitRecords {
    /// Runs `wait`, recorded as the calling thread's wait on `target`, made by the public call `call`.
    ///
    /// `target` is a ``WaitTarget``; the report asks it, and skips a wait on anything else.
    ///
    /// The caller keeps `target` alive until `wait` returns.
    package static func whileParked<Result>(
        on target: AnyObject,
        as call: BlockingCall,
        _ wait: () -> Result
    )
        -> Result
    {
        Self.whileParked(at: UnsafeRawPointer(Unmanaged.passUnretained(target).toOpaque()), as: call, wait)
    }

    /// Runs `wait` as ``whileParked(on:as:_:)`` does, for a target given by its unretained address.
    package static func whileParked<Result>(
        at target: UnsafeRawPointer,
        as call: BlockingCall,
        _ wait: () -> Result
    )
        -> Result
    {
        Self.begin(at: target, as: call)
        defer { ck_wait_end() }
        return wait()
    }

    /// Records that the calling thread now waits on the object at `target` for `call`; end it with ``end()``.
    package static func begin(at target: UnsafeRawPointer, as call: BlockingCall) {
        var entry = ck_wait_entry()
        entry.object = target
        entry.api = call.api.hasPointerRepresentation ? call.api.utf8Start : nil
        entry.apiCount = call.api.hasPointerRepresentation ? call.api.utf8CodeUnitCount : 0
        entry.file = call.file.hasPointerRepresentation ? call.file.utf8Start : nil
        entry.fileCount = call.file.hasPointerRepresentation ? call.file.utf8CodeUnitCount : 0
        entry.line = call.line
        entry.since = DispatchTime.now().uptimeNanoseconds
        ck_wait_begin(&entry)
    }

    /// Ends the calling thread's wait.
    package static func end() {
        ck_wait_end()
    }

    /// Records that the calling thread holds the resource `identity` (``identity(of:)``), taken at `file`:`line`.
    ///
    /// For holders the resource does not record itself (a semaphore's permit taken by `perform`). Pair it with
    /// ``unhold(_:)`` on the same thread. A few plain stores into the thread's own record, inlined from C.
    package static func hold(_ identity: UInt, file: StaticString, line: UInt) {
        ck_wait_hold(identity, file.utf8Start, file.utf8CodeUnitCount, line)
    }

    /// Records that the calling thread no longer holds the resource `identity`.
    package static func unhold(_ identity: UInt) {
        ck_wait_unhold(identity)
    }

    /// How records name a resource: its object's address.
    package static func identity(of resource: AnyObject) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(resource).toOpaque())
    }

    /// One thread as the records show it at one moment.
    struct ThreadRecord {
        var waiter: WaitReport.Waiter
        var wait: WaitRecord?
        /// What it holds that only its own records know: the resource's identity, and where it took it.
        var held: [(resource: UInt, site: String?)]
    }

    /// One thread's wait as the records show it.
    struct WaitRecord {
        var call: String
        var site: String
        var since: UInt64
        var resource: WaitReport.Resource
        var holding: WaitHolding
    }

    /// Every recorded thread that waits or holds something now.
    static func threads() -> [ThreadRecord] {
        final class Collector {
            var threads: [ThreadRecord] = []
        }
        let collector = Collector()
        withExtendedLifetime(collector) {
            ck_wait_visit(Unmanaged.passUnretained(collector).toOpaque()) {
                context,
                thread,
                kernel,
                wait,
                held,
                count in
                let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                let waiter = WaitReport.Waiter(
                    kind: .thread,
                    id: UInt(thread),
                    kernelThreadID: kernel,
                    name: WaitRecords.name(ofThread: kernel)
                )
                let heldList = (0..<count).map { index in
                    let entry = held[index]
                    return (
                        resource: UInt(entry.resource), site: WaitRecords.site(entry.file, entry.fileCount, entry.line)
                    )
                }
                collector.threads.append(
                    ThreadRecord(waiter: waiter, wait: wait.flatMap { WaitRecords.record($0.pointee) }, held: heldList)
                )
            }
        }
        return collector.threads
    }

    /// Reads the wait `entry`, whose target its thread keeps alive for the call.
    private static func record(_ entry: ck_wait_entry) -> WaitRecord? {
        guard let object = entry.object,
            let target = Unmanaged<AnyObject>.fromOpaque(object).takeUnretainedValue() as? any WaitTarget
        else { return nil }
        return WaitRecord(
            call: Self.text(entry.api, entry.apiCount) ?? "a wait",
            site: Self.site(entry.file, entry.fileCount, entry.line) ?? "an unknown site",
            since: entry.since,
            resource: target.waitResource,
            holding: target.waitHolding
        )
    }

    private static func text(_ start: UnsafePointer<UInt8>?, _ count: Int) -> String? {
        guard let start else { return nil }
        return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }

    private static func site(_ file: UnsafePointer<UInt8>?, _ count: Int, _ line: UInt) -> String? {
        Self.text(file, count).map { line == 0 ? $0 : "\($0):\(line)" }
    }

    /// The name of the thread with the kernel ID `thread`, if it has one.
    private static func name(ofThread thread: UInt64) -> String? {
        var buffer = [CChar](repeating: 0, count: 32)
        guard ck_wait_thread_name(thread, &buffer, buffer.count) else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }
}
