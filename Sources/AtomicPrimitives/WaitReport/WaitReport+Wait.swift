extension WaitReport {
    /// One thread's or task's wait in progress.
    public struct Wait: Sendable, CustomStringConvertible {
        /// The waiting thread or task.
        public let waiter: Waiter
        /// The call that waits, as written: `"CountingSemaphore.wait()"`.
        public let call: String
        /// Where the call was made: `"App/Worker.swift:42"`.
        public let site: String
        /// What the call waits on.
        public let resource: Resource
        /// How long it has waited, up to the moment of the report.
        public let duration: Duration
        /// Who holds what it waits on, as far as the records know; empty when nobody is known to (a semaphore that
        /// nobody signals, or whose resources were taken by `wait()` rather than `perform`).
        public let holders: [Holder]
        /// A word on the resource's state, such as a semaphore's count and its line; `nil` for none.
        public let state: String?
        /// When the wait began, for telling one wait from the next of the same waiter.
        let since: UInt64

        /// What tells this wait apart from any other: the thread, and when its wait began.
        var key: WaitKey {
            WaitKey(waiter: self.waiter, since: self.since)
        }

        /// `thread 4242 "worker" has waited 2.0 s in MutexLock.lock() at App/Worker.swift:42 for MutexLock "ledger"
        /// (made at App/Ledger.swift:3), held by thread 4243 "reader" (taken at App/Reader.swift:9)`.
        public var description: String {
            var text =
                "\(self.waiter) has waited \(Self.format(self.duration)) in \(self.call) at \(self.site) "
                + "for \(self.resource)"
            if let state = self.state { text += " [\(state)]" }
            if self.holders.isEmpty {
                text += ", held by nobody the records know"
            } else {
                text += ", held by " + self.holders.map(\.description).joined(separator: " and ")
            }
            return text
        }

        /// A duration as a person reads it: `"12 ms"`, `"2.5 s"`.
        static func format(_ duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            if seconds >= 10 { return "\(seconds) s" }
            let milliseconds = Double(seconds) * 1_000 + Double(attoseconds) / 1e15
            if milliseconds >= 1_000 { return "\((milliseconds / 100).rounded() / 10) s" }
            if milliseconds >= 1 { return "\(Int(milliseconds)) ms" }
            return "\(Int(milliseconds * 1_000)) µs"
        }
    }

    /// A wait, told apart from every other.
    struct WaitKey: Hashable {
        var waiter: Waiter
        var since: UInt64
    }

    /// A thread or task in the report.
    public struct Waiter: Sendable, Hashable, CustomStringConvertible {
        /// Whether a waiter is a thread or a task.
        public enum Kind: Sendable, Hashable {
            /// A thread, blocked.
            case thread
            /// A Swift concurrency task, suspended.
            case task
        }

        /// Whether it is a thread or a task.
        public let kind: Kind
        /// A thread's `pthread_t`, or a task's identity, as a number.
        public let id: UInt
        /// The kernel's ID of a thread (Linux: what `gettid()`, `top -H` and debuggers show); 0 if unknown, and for a
        /// task.
        public let kernelThreadID: UInt64
        /// The thread's name, if it has one.
        public let name: String?

        /// Names a waiter.
        ///
        /// - Parameters:
        ///   - kind: Thread or task.
        ///   - id: Its identity.
        ///   - kernelThreadID: A thread's kernel ID; 0 if unknown.
        ///   - name: Its name.
        package init(kind: Kind, id: UInt, kernelThreadID: UInt64 = 0, name: String? = nil) {
            self.kind = kind
            self.id = id
            self.kernelThreadID = kernelThreadID
            self.name = name
        }

        /// `thread 4242 "worker"`, by the kernel's ID where known; `task 0x…`.
        public var description: String {
            let hex = "0x" + String(self.id, radix: 16)
            guard self.kind == .thread else { return "task \(hex)" }
            let id = self.kernelThreadID != 0 ? "\(self.kernelThreadID)" : hex
            return self.name.map { "thread \(id) \"\($0)\"" } ?? "thread \(id)"
        }
    }

    /// Something waited on: a lock, a semaphore, a value's turn, a group, a queue.
    public struct Resource: Sendable, Hashable, CustomStringConvertible {
        /// Its type: `"MutexLock"`, `"QueueSafeValue<Int>"`.
        public let type: String
        /// The name it was given at `init`, if any.
        public let name: String?
        /// Where it was made, if known: `"App/Ledger.swift:3"`.
        public let madeAt: String?
        /// Its identity: the object's address.
        public let identity: UInt

        /// Names a resource.
        ///
        /// - Parameters:
        ///   - type: Its type.
        ///   - name: The name it was given.
        ///   - madeAt: Where it was made.
        ///   - identity: Its object's address.
        package init(type: String, name: String?, madeAt: String?, identity: UInt) {
            self.type = type
            self.name = name
            self.madeAt = madeAt
            self.identity = identity
        }

        /// `MutexLock "ledger" (made at App/Ledger.swift:3)`.
        public var description: String {
            var text = self.type
            if let name = self.name { text += " \"\(name)\"" }
            text += self.madeAt.map { " (made at \($0))" } ?? " at 0x" + String(self.identity, radix: 16)
            return text
        }
    }

    /// A thread or task that holds what a wait waits on.
    public struct Holder: Sendable, Hashable, CustomStringConvertible {
        /// The holding thread or task.
        public let waiter: Waiter
        /// Where it took what it holds, if known.
        public let site: String?

        /// `thread 4243 "reader" (taken at App/Reader.swift:9)`.
        public var description: String {
            self.site.map { "\(self.waiter) (taken at \($0))" } ?? "\(self.waiter)"
        }
    }

    /// A cycle of waits: each thread waits for something the next one holds, and the last for something the first
    /// holds.
    public struct Deadlock: Sendable, CustomStringConvertible {
        /// The waits of the cycle, in its order.
        public let waits: [Wait]

        /// Each edge of the cycle on its own line.
        public var description: String {
            var lines = ["a cycle of \(WaitReport.count(self.waits.count, "wait")); none of these waiters can go on"]
            for (index, wait) in self.waits.enumerated() {
                let next = self.waits[(index + 1) % self.waits.count].waiter
                let held = wait.holders.first { $0.waiter == next }
                let taken = held?.site.map { " (taken at \($0))" } ?? ""
                lines.append(
                    "  \(wait.waiter) waits in \(wait.call) at \(wait.site) for \(wait.resource), "
                        + "held by \(next)\(taken)"
                )
            }
            return lines.joined(separator: "\n")
        }
    }
}
