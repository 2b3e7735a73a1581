internal import ConcurrencyKitCShims
import Dispatch

/// Where the package's waits record themselves for ``WaitReport``, and where the report reads them back.
///
/// A thread records its wait only once it parks (a semaphore's waiter after it has watched its grant for a while, a
/// lock after its try to take it failed), with a few plain stores into its own record (``ck_wait_begin``); nothing
/// is recorded on an uncontended path. A report reads every thread's record without stopping it: a thread that ends
/// its wait while the report reads that wait waits for the read to end, a few stores' time, so that the target the
/// report looks at stays alive.
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

    /// Runs `wait` as ``whileParked(on:as:_:)`` does, for a call `api` made at `site`, a ``PackedSite``.
    package static func whileParked<Result>(
        at target: UnsafeRawPointer,
        api: StaticString,
        site: UInt,
        _ wait: () -> Result
    ) -> Result {
        let file = PackedSite.file(of: site)
        var fileCount = 0
        while let file, file[fileCount] != 0 { fileCount += 1 }
        Self.begin(at: target, api: api, file: file, fileCount: fileCount, line: PackedSite.line(of: site))
        defer { ck_wait_end() }
        return wait()
    }

    /// A wait begun by ``begin(on:as:)``, to end with ``end(_:)``.
    package struct Begun: @unchecked Sendable {
        // Safety: the record of the thread that began the wait, which lives until that thread exits; ending the wait
        // from another thread is what it is for.
        fileprivate let record: UnsafeMutableRawPointer
    }

    /// Records that the calling thread now waits on `target` for `call`, for a wait that may end on another thread:
    /// a `sync` ends its wait where its block starts, which for the main queue is the thread that drains it.
    ///
    /// The caller keeps `target` alive, and stays in the call, until ``end(_:)`` returns.
    /// Its start is read coarsely, to a few milliseconds, for a few nanoseconds: a `sync` records itself whether it
    /// will wait or not.
    package static func begin(on target: AnyObject, as call: BlockingCall) -> Begun {
        let target = UnsafeRawPointer(Unmanaged.passUnretained(target).toOpaque())
        return Begun(record: Self.begin(at: target, as: call, coarsely: true))
    }

    /// Ends the wait `wait`, from any thread; returns once no report reads it any more.
    package static func end(_ wait: Begun) {
        ck_wait_end_of(wait.record)
    }

    /// Records that the calling thread now waits on the object at `target` for `call`, until `ck_wait_end()`; read
    /// the start `coarsely` if asked.
    @discardableResult
    private static func begin(
        at target: UnsafeRawPointer,
        as call: BlockingCall,
        coarsely: Bool = false
    ) -> UnsafeMutableRawPointer {
        Self.begin(
            at: target,
            api: call.api,
            file: call.file.hasPointerRepresentation ? call.file.utf8Start : nil,
            fileCount: call.file.hasPointerRepresentation ? call.file.utf8CodeUnitCount : 0,
            line: call.line,
            coarsely: coarsely
        )
    }

    /// Records that the calling thread now waits on the object at `target` in `api`, called at `file`:`line`, until
    /// `ck_wait_end()`, since now (read `coarsely`, to a few milliseconds, if asked); returns the thread's record.
    @discardableResult
    private static func begin(
        at target: UnsafeRawPointer,
        api: StaticString,
        file: UnsafePointer<UInt8>?,
        fileCount: Int,
        line: UInt,
        coarsely: Bool = false
    ) -> UnsafeMutableRawPointer {
        var entry = ck_wait_entry()
        entry.object = target
        entry.api = api.hasPointerRepresentation ? api.utf8Start : nil
        entry.apiCount = api.hasPointerRepresentation ? api.utf8CodeUnitCount : 0
        entry.file = file
        entry.fileCount = fileCount
        entry.line = line
        entry.since = coarsely ? 0 : DispatchTime.now().uptimeNanoseconds
        return ck_wait_begin(&entry)
    }

    /// Whether `GCDQueue.sync` records its waits (see ``WaitReport/recordsQueueSyncs``).
    package static var recordsSyncs: Bool {
        get { ck_wait_records_syncs() }
        set { ck_wait_set_records_syncs(newValue) }
    }

    /// How records name a resource: its object's address.
    package static func identity(of resource: AnyObject) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(resource).toOpaque())
    }

    /// One thread or task as the records show it at one moment.
    struct ThreadRecord {
        var waiter: WaitReport.Waiter
        var wait: WaitRecord
    }

    /// One thread's wait as the records show it.
    struct WaitRecord {
        var call: String
        var site: String
        var since: UInt64
        var resource: WaitReport.Resource
        var holding: WaitHolding
    }

    /// One waiting thread's record as a visit copies it: the target retained, and its holders, read while the thread
    /// could not leave the wait (so a holder is never the waiter itself, nor one from after the wait).
    private struct Copied {
        var thread: UInt
        var kernelThread: UInt64
        var entry: ck_wait_entry
        var target: Unmanaged<AnyObject>
        var holding: WaitHolding?
    }

    /// Every recorded thread that waits now.
    ///
    /// The visit only copies each waiting thread's record, retains its target and reads its holders (atomic loads),
    /// while that thread is held in its wait; the targets are described, and the threads' names read, after the visit
    /// has let every thread go.
    static func threads() -> [ThreadRecord] {
        final class Collector {
            var copied: [Copied] = []
        }
        let collector = Collector()
        collector.copied.reserveCapacity(16)
        withExtendedLifetime(collector) {
            ck_wait_visit(Unmanaged.passUnretained(collector).toOpaque()) { context, thread, kernel, wait in
                let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                let entry = wait.pointee
                guard let object = entry.object else { return }
                let target = Unmanaged<AnyObject>.fromOpaque(object).retain()
                // Atomic loads only (``WaitTarget``'s rule): the thread waits for this to end.
                let holding = (target.takeUnretainedValue() as? any WaitTarget)?.waitHolding
                collector.copied.append(
                    Copied(thread: UInt(thread), kernelThread: kernel, entry: entry, target: target, holding: holding)
                )
            }
        }
        return collector.copied.compactMap { copied in
            defer { copied.target.release() }
            guard let holding = copied.holding,
                let record = Self.record(copied.entry, target: copied.target.takeUnretainedValue(), holding: holding)
            else { return nil }
            let waiter = WaitReport.Waiter(
                kind: .thread,
                id: copied.thread,
                kernelThreadID: copied.kernelThread,
                name: Self.name(ofThread: copied.kernelThread)
            )
            return ThreadRecord(waiter: waiter, wait: record)
        }
    }

    /// Reads the wait `entry` on `target`, which the caller keeps alive, held as `holding` says.
    private static func record(_ entry: ck_wait_entry, target: AnyObject, holding: WaitHolding) -> WaitRecord? {
        guard let target = target as? any WaitTarget else { return nil }
        return WaitRecord(
            call: Self.text(entry.api, entry.apiCount) ?? "a wait",
            site: Self.site(entry.file, entry.fileCount, entry.line) ?? "an unknown site",
            since: entry.since,
            resource: target.waitResource,
            holding: holding
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
