/// A per-thread stack of small records, each living in the stack frame of the call that pushed it: no allocation.
///
/// The modules above keep in it what a thread is inside of: DispatchKit the innermost entry of its `sync` record,
/// SafeValueCore the values whose completions run.
package final class ThreadFrameStack: Sendable {
    /// One record: an identity, and the frame below it.
    package struct Frame {
        /// What the frame records, usually an object's address.
        package let id: UInt
        fileprivate let previous: UnsafeMutableRawPointer?
    }

    /// A thread's frames from its top down.
    package struct Chain {
        fileprivate let top: UnsafeMutableRawPointer?
    }

    private let key: CThreadKey

    package init() {
        self.key = CLibrary.makeThreadKey(releasesObject: false)
    }

    /// The calling thread's chain, from its top frame down.
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
    ///   - chain: The calling thread's ``chain``, read by the caller.
    ///   - body: Gets the chain with the new frame on top.
    package func withFrame(id: UInt, on chain: Chain, _ body: (Chain) -> Void) {
        var frame = Frame(id: id, previous: chain.top)
        withUnsafeMutablePointer(to: &frame) { pointer in
            let pushed = UnsafeMutableRawPointer(pointer)
            self.set(pushed)
            body(Chain(top: pushed))
        }
        self.set(chain.top)
    }

    private func set(_ pointer: UnsafeMutableRawPointer?) {
        CLibrary.setThreadValue(self.key, pointer)
    }
}
