/// A per-thread stack of small records, each living in the stack frame of the call that pushed it: no allocation.
///
/// The modules above keep in it what a thread is inside of: DispatchKit the queues of nested `sync` calls,
/// SafeValueCore the values whose completions run. A thread that blocks while another runs work on its behalf (a
/// `sync` onto another queue) hands its chain to that thread with ``withChain(_:_:)``: the frames stay valid while it
/// waits, so the record follows the logical nesting, not only the thread.
package final class ThreadFrameStack: Sendable {
    /// One record: an identity, a kind the owner defines, and the frame below it.
    package struct Frame {
        /// What the frame records, usually an object's address.
        package let id: UInt
        /// What kind of record it is; the owner gives the values meaning.
        package let kind: UInt
        fileprivate let previous: UnsafeMutableRawPointer?
    }

    /// A thread's frames from its top down, as handed to another thread that works on its behalf.
    // Safety: the frames are immutable once pushed and stay valid while the thread that owns them waits for the work
    // it handed the chain to; nothing else may hold a chain.
    package struct Chain: @unchecked Sendable {
        fileprivate let top: UnsafeMutableRawPointer?

        /// Whether the chain has no frames.
        package var isEmpty: Bool { self.top == nil }
    }

    private let key: CThreadKey

    package init() {
        self.key = CLibrary.makeThreadKey(releasesObject: false)
    }

    /// The calling thread's chain, from its top frame down.
    ///
    /// Pass it to ``withChain(_:_:)`` on another thread that works on this thread's behalf.
    package var chain: Chain {
        Chain(top: CLibrary.threadValue(self.key))
    }

    /// The calling thread's top frame.
    package var topFrame: Frame? {
        CLibrary.threadValue(self.key)?.load(as: Frame.self)
    }

    /// Whether the calling thread's stack holds a frame with `id` (of any kind).
    package func contains(_ id: UInt) -> Bool {
        self.contains(id, in: self.chain)
    }

    /// Whether `chain` holds a frame with `id` (of any kind).
    package func contains(_ id: UInt, in chain: Chain) -> Bool {
        var next = chain.top
        while let current = next {
            let frame = current.load(as: Frame.self)
            if frame.id == id { return true }
            next = frame.previous
        }
        return false
    }

    /// Runs `body` with a frame for `id` pushed on the calling thread's stack.
    ///
    /// - Parameters:
    ///   - id: What the frame records.
    ///   - kind: What kind of record it is.
    ///   - chain: The calling thread's ``chain``, read by the caller.
    ///   - body: Gets the chain with the new frame on top.
    package func withFrame(id: UInt, kind: UInt = 0, on chain: Chain, _ body: (Chain) -> Void) {
        var frame = Frame(id: id, kind: kind, previous: chain.top)
        withUnsafeMutablePointer(to: &frame) { pointer in
            let pushed = UnsafeMutableRawPointer(pointer)
            self.set(pushed)
            body(Chain(top: pushed))
        }
        self.set(chain.top)
    }

    /// Runs `body` with the calling thread's stack replaced by `chain`, taken from a thread that waits meanwhile.
    package func withChain(_ chain: Chain, _ body: () -> Void) {
        let previous = CLibrary.threadValue(self.key)
        // Already this thread's chain: the work runs on the waiting thread itself, as `dispatch_sync` mostly does.
        guard previous != chain.top else { return body() }
        self.set(chain.top)
        body()
        self.set(previous)
    }

    private func set(_ pointer: UnsafeMutableRawPointer?) {
        CLibrary.setThreadValue(self.key, pointer)
    }
}
