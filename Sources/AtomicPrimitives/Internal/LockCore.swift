import Synchronization

/// The mutex behind ``MutexLock`` and ``AtomicBox``: a ``RawMutex`` (a futex word on Linux, a `pthread_mutex_t`
/// elsewhere), its owner and, for a box, the value, in one heap block.
///
/// The block never moves (never `&self.storedMutex`, which is valid for one call only): the mutex at its start, the
/// owner after it, then the payload the lock guards, if any (``AtomicBox``'s value). Everything a holder writes is in
/// that block, a cache line for a small value, as `NIOLockedValueBox` keeps its value beside its lock; the struct
/// itself, stored in the owning object, is never written after `init`, so that threads waiting for the lock do not
/// pull the holder's line away by reading it.
///
/// The owner is recorded after locking and cleared before unlocking, with relaxed atomics: one load and one store to
/// lock, one store to unlock. Before locking, the owner is compared with the caller's thread ID, so that re-entry (a
/// deadlock waiting to happen) becomes a trap. The owner can only equal the caller's ID if the caller itself stored it
/// and has not unlocked since, so the check needs no memory ordering.
///
/// In debug builds every lock made with ``init(name:type:peers:payload:file:line:)`` joins the lock-order graph
/// (``LockOrderChecker``) and is a ``chaosPoint(_:)`` on acquire and release; release builds compile both out.
@usableFromInline
package struct LockCore: ~Copyable {
    /// The start of the block: the mutex.
    @usableFromInline
    let mutex: RawMutex

    /// The name the lock was given, for the wait report; `nil` for none.
    package let name: String?
    /// Where the lock's owner was made, a ``PackedSite``, for the wait report; 0 for the diagnostics' own locks.
    package let madeAt: UInt

    #if DEBUG
    /// The lock's node in the lock-order graph, retained by the lock; ``LockOrderKey/unobserved`` for the
    /// diagnostics' own locks.
    @usableFromInline
    let observer: LockOrderKey
    /// The node's serial number, 0 for the diagnostics' own locks: what the per-acquisition path reads.
    @usableFromInline
    let observerSerial: UInt64
    #endif

    /// The size and alignment of what a lock guards in its own block: ``AtomicBox``'s value.
    package typealias PayloadLayout = (size: Int, alignment: Int)

    /// No payload: a bare lock.
    package static var noPayload: PayloadLayout { (0, 1) }

    /// Makes a lock that joins the lock-order graph in debug builds.
    ///
    /// - Parameters:
    ///   - name: What lock-order reports call it; when `nil`, `type` and the creation site.
    ///   - type: The type that owns the lock, for reports.
    ///   - peers: The class of locks that may never be held two at a time, if the lock belongs to one.
    ///   - payload: The layout of what the lock guards in its block, left uninitialized for the owner (see
    ///     ``payload(_:)``); none by default.
    ///   - file: Where the owner was made.
    ///   - line: Where the owner was made.
    package init(
        name: String? = nil,
        type: Any.Type = InternalLock.self,
        peers: LockOrderPeerClass? = nil,
        payload: PayloadLayout = LockCore.noPayload,
        file: StaticString = #fileID,
        line: UInt = #line
    ) {
        self.mutex = Self.makeBlock(payload)
        self.name = name
        self.madeAt = PackedSite.pack(file: file, line: line)
        #if DEBUG
        let node = LockOrderNode(name: name, type: type, peers: peers, file: file, line: line)
        self.observer = LockOrderKey(Unmanaged.passRetained(node).takeUnretainedValue())
        self.observerSerial = node.serial
        #endif
    }

    /// Makes a lock outside the lock-order graph and schedule chaos: for the diagnostics' own state.
    ///
    /// - Parameters:
    ///   - unobserved: Marks the lock as one the checker does not see.
    ///   - payload: As for ``init(name:type:peers:payload:file:line:)``.
    package init(unobserved: (), payload: PayloadLayout = LockCore.noPayload) {
        self.mutex = Self.makeBlock(payload)
        self.name = nil
        self.madeAt = PackedSite.none
        #if DEBUG
        self.observer = .unobserved
        self.observerSerial = 0
        #endif
    }

    /// Where the owner sits in the block: after the mutex.
    @inlinable
    static var ownerOffset: Int {
        let alignment = MemoryLayout<Atomic<UInt>>.alignment
        return (RawMutex.size + alignment - 1) & ~(alignment - 1)
    }

    /// Where the owner's site sits in the block: after the owner.
    @inlinable
    static var siteOffset: Int {
        Self.ownerOffset + MemoryLayout<Atomic<UInt>>.size
    }

    /// Where a payload with `alignment` sits in the block: after the owner's site.
    ///
    /// A payload of up to 40 bytes shares the first cache line with the lock on Linux; none does with Darwin's
    /// 64-byte `pthread_mutex_t`.
    @inlinable
    static func payloadOffset(alignment: Int) -> Int {
        (Self.siteOffset + MemoryLayout<Atomic<UInt>>.size + alignment - 1) & ~(alignment - 1)
    }

    /// The block is a whole number of cache lines, aligned to one, so that a neighbour's writes never share its line.
    private static var cacheLine: Int { 64 }

    /// Allocates the block with an initialized mutex, an owner of 0 and room for `payload`.
    private static func makeBlock(_ payload: PayloadLayout) -> RawMutex {
        let alignment = max(Self.cacheLine, RawMutex.alignment, payload.alignment)
        let end = Self.payloadOffset(alignment: payload.alignment) + payload.size
        let size = (end + Self.cacheLine - 1) & ~(Self.cacheLine - 1)
        let block = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: alignment)
        let owner = (block + Self.ownerOffset).bindMemory(to: Atomic<UInt>.self, capacity: 2)
        owner.initialize(to: Atomic(0))
        (owner + 1).initialize(to: Atomic(PackedSite.none))
        return RawMutex.initialize(at: block)
    }

    /// The thread that holds the mutex, 0 for none, in the block beside it.
    @inlinable
    var owner: UnsafeMutablePointer<Atomic<UInt>> {
        (self.mutex.address + Self.ownerOffset).assumingMemoryBound(to: Atomic<UInt>.self)
    }

    /// Where the owner took the mutex, a ``PackedSite``, in the block after the owner: for the wait report.
    @inlinable
    var ownerSite: UnsafeMutablePointer<Atomic<UInt>> {
        (self.mutex.address + Self.siteOffset).assumingMemoryBound(to: Atomic<UInt>.self)
    }

    /// How the wait report names the lock of an object `owner` of type `type`.
    package func waitResource(of owner: AnyObject, type: String) -> WaitReport.Resource {
        WaitReport.Resource(
            type: type,
            name: self.name,
            madeAt: PackedSite.describe(self.madeAt),
            identity: WaitRecords.identity(of: owner)
        )
    }

    /// The owner and where it took the mutex, as the wait report reads them from another thread; no holder if free.
    package var waitHolding: WaitHolding {
        guard let owner = WaitHolding.read(holder: self.owner.pointee, site: self.ownerSite.pointee) else {
            return WaitHolding()
        }
        return WaitHolding(holders: [.init(id: owner.word, site: owner.site)])
    }

    /// Where the payload of type `Payload` lives in the block.
    ///
    /// The lock's owner initializes it after `init`, and deinitializes it before the lock is destroyed. Touch its
    /// value only while holding the lock.
    ///
    /// - Parameter type: The payload's type, whose layout the lock was made with.
    /// - Returns: The payload's address, stable for the lock's life.
    @inlinable
    package func payload<Payload>(_ type: Payload.Type) -> UnsafeMutablePointer<Payload> {
        let offset = Self.payloadOffset(alignment: MemoryLayout<Payload>.alignment)
        // Binding compiles to nothing; it tells the optimizer what the bytes hold, also before the first initialize.
        return (self.mutex.address + offset).bindMemory(to: Payload.self, capacity: 1)
    }

    deinit {
        #if DEBUG
        if self.observerSerial != 0 {
            LockOrderNode.lockDestroyed(self.observer.node, holder: self.owner.pointee.load(ordering: .relaxed))
        }
        #endif
        // Releasing a lock that is still held is allowed: nobody else can reach it any more.
        self.mutex.destroy(held: self.owner.pointee.load(ordering: .relaxed) != 0)
        self.owner.deinitialize(count: 2)
        self.mutex.address.deallocate()
    }

    /// How a re-entry trap names the lock, after its type: its name and where it was made, then where the calling
    /// thread, which holds it, took it (` "cache" (made at App/Cache.swift:3), taken on this thread at
    /// App/Cache.swift:12`), from what the wait report keeps, so in every build; empty for the diagnostics' own locks.
    package var reentryDescription: String {
        guard let madeAt = PackedSite.describe(self.madeAt) else { return "" }
        let named = self.name.map { " \"\($0)\" (made at \(madeAt))" } ?? " (made at \(madeAt))"
        // The caller holds the lock, so the site is its own, stored as it took the lock.
        guard let site = PackedSite.describe(self.ownerSite.pointee.load(ordering: .acquiring)) else { return named }
        return "\(named), taken on this thread at \(site)"
    }

    /// Takes the mutex; calls `onReentry` (which must trap) if the calling thread already holds it.
    ///
    /// - Parameters:
    ///   - file: The acquisition's file, for lock-order reports (debug builds only).
    ///   - line: The acquisition's line; 0 to show `file` as an entry point's name.
    ///   - onReentry: Traps with the owner's message.
    @inlinable
    package func lock(file: StaticString = #fileID, line: UInt = #line, onReentry: () -> Never) {
        self.lock(file: file, line: line, reporting: nil, onReentry: onReentry)
    }

    /// Takes the mutex as ``lock(file:line:onReentry:)`` does; if it has to wait, the wait report shows the calling
    /// thread waiting on `target` for `call`.
    ///
    /// - Parameters:
    ///   - file: The acquisition's file, for lock-order reports and the wait report.
    ///   - line: The acquisition's line.
    ///   - waiting: What the wait report shows the thread waiting on (a ``WaitTarget``, by its unretained
    ///     address: nothing to retain on the uncontended path), and in which call; `nil` records nothing.
    ///   - onReentry: Traps with the owner's message.
    @inlinable
    package func lock(
        file: StaticString = #fileID,
        line: UInt = #line,
        reporting waiting: (target: UnsafeRawPointer, call: Call)?,
        onReentry: () -> Never
    ) {
        let thread = currentThreadID()
        if self.owner.pointee.load(ordering: .relaxed) == thread {
            onReentry()
        }
        #if DEBUG
        // No new locals on purpose: an unoptimized build zero-fills each one on every call.
        if self.observerSerial != 0 && DiagnosticSwitches.flags.load(ordering: .relaxed) != 0 {
            LockOrderChecker.lockWillAcquire(self.observer, file: file, line: line)
        }
        #endif
        // The free mutex is taken by the try; only a thread that has to wait records its wait.
        if !self.mutex.tryLock() {
            Self.lockWaiting(self.mutex, at: PackedSite.pack(file: file, line: line), reporting: waiting)
        }
        self.ownerSite.pointee.store(PackedSite.pack(file: file, line: line), ordering: .releasing)
        self.owner.pointee.store(thread, ordering: .releasing)
    }

    /// The public call a thread waiting for a lock is in, for the wait report: one byte to pass, where a
    /// `StaticString` would take three words on the inlined path.
    @usableFromInline
    package enum Call: UInt8 {
        /// `MutexLock.lock()`.
        case mutexLock
        /// `MutexLock.withLock(_:)`.
        case mutexWithLock
        /// `AtomicBox.value`.
        case boxValue
        /// `AtomicBox.mutate(_:)`.
        case boxMutate

        /// The call as users write it.
        var api: StaticString {
            switch self {
            case .mutexLock: "MutexLock.lock()"
            case .mutexWithLock: "MutexLock.withLock(_:)"
            case .boxValue: "AtomicBox.value"
            case .boxMutate: "AtomicBox.mutate(_:)"
            }
        }
    }

    /// `mutex` is taken: waits for it, recorded for the wait report if `waiting` says as what, with the caller's
    /// `site` (a ``PackedSite``).
    ///
    /// Static, and passed four words, so that the path inlined into callers loads nothing more of the lock for it
    /// and stays small.
    @usableFromInline
    @inline(never)
    static func lockWaiting(
        _ mutex: RawMutex,
        at site: UInt,
        reporting waiting: (target: UnsafeRawPointer, call: Call)?
    ) {
        if let waiting {
            WaitRecords.whileParked(at: waiting.target, api: waiting.call.api, site: site) {
                mutex.lockAfterFailedTry()
            }
        } else {
            mutex.lockAfterFailedTry()
        }
    }

    /// Takes the mutex if it is free and returns whether it did; never waits, so it adds no lock-order edge.
    ///
    /// - Parameters:
    ///   - file: The acquisition's file, for lock-order reports (debug builds only).
    ///   - line: The acquisition's line.
    /// - Returns: Whether the calling thread now holds the mutex.
    @inlinable
    package func tryLock(file: StaticString = #fileID, line: UInt = #line) -> Bool {
        guard self.mutex.tryLock() else { return false }
        self.ownerSite.pointee.store(PackedSite.pack(file: file, line: line), ordering: .releasing)
        self.owner.pointee.store(currentThreadID(), ordering: .releasing)
        #if DEBUG
        if self.observerSerial != 0, LockOrderChecking.isOn {
            LockOrderChecker.didAcquire(self.observer, file: file, line: line)
        }
        #endif
        return true
    }

    /// Releases the mutex, which the calling thread holds.
    @inlinable
    package func unlock() {
        #if DEBUG
        let observed = self.observerSerial != 0 && DiagnosticSwitches.flags.load(ordering: .relaxed) != 0
        if observed {
            LockOrderChecker.lockWillRelease(self.observerSerial)
        }
        #endif
        self.owner.pointee.store(0, ordering: .relaxed)
        self.mutex.unlock()
        #if DEBUG
        if observed {
            LockOrderChecker.lockDidRelease()
        }
        #endif
    }

    /// The lock's serial number in the lock-order graph; 0 in release builds and for unobserved locks.
    package var lockOrderSerial: UInt64 {
        #if DEBUG
        self.observerSerial
        #else
        0
        #endif
    }

    /// Whether the calling thread is the one holding the mutex.
    @inlinable
    package var isHeldByCurrentThread: Bool {
        self.owner.pointee.load(ordering: .relaxed) == currentThreadID()
    }

    /// Whether anyone holds the mutex at this instant.
    package var isLocked: Bool {
        self.mutex.isLocked
    }
}

/// The type lock-order reports give a ``LockCore`` made without one: a lock inside ConcurrencyKit.
enum InternalLock {}
