import AtomicPrimitives
import Synchronization

/// One event of a property test's history: what happened, on which thread, in which global order.
public struct HistoryEvent: Sendable, CustomStringConvertible {
    /// The event's place in the history: a total order consistent with what each thread saw.
    public let sequence: Int
    /// The thread that recorded it.
    public let thread: UInt
    /// What happened, such as `issued`, `start`, `end` or `cancelReturned`.
    public let kind: String
    /// Which command, value or subscriber the event is about.
    public let payload: Int
    /// A second number: a priority, a sender, an attempt.
    public let detail: Int

    /// One line: sequence, a short thread id, kind, payload and detail.
    public var description: String {
        "#\(self.sequence) t\(String(self.thread % 0x10000, radix: 16)) \(self.kind) \(self.payload)/\(self.detail)"
    }
}

/// A thread-safe history of events, in the style of jcstress and Lincheck: workers record what they did, and a
/// property test checks the contract's rule against the whole history afterwards.
///
/// The sequence number is taken under the same lock that appends the event, so the history's order is one in which
/// every event recorded after another on any thread comes later (a linearization of the records).
public final class PropertyHistory: Sendable {
    private let storage = AtomicBox<[HistoryEvent]>([])

    /// Creates an empty history.
    public init() {}

    /// Records one event; returns its sequence number.
    @discardableResult
    public func record(_ kind: String, _ payload: Int = 0, _ detail: Int = 0) -> Int {
        let thread = currentThreadID()
        return self.storage.mutate { events in
            let sequence = events.count
            events.append(
                HistoryEvent(sequence: sequence, thread: thread, kind: kind, payload: payload, detail: detail)
            )
            return sequence
        }
    }

    /// The events recorded so far, in sequence order.
    public var events: [HistoryEvent] { self.storage.value }

    /// How many events were recorded so far: the run's progress, for ``waitForProgress(_:stillFor:progress:)``.
    public var count: Int { self.storage.mutate { $0.count } }

    /// A few lines of the history around the given sequence numbers, for a failure message.
    public func excerpt(around sequences: [Int], radius: Int = 4) -> String {
        Self.excerpt(of: self.events, around: sequences, radius: radius)
    }

    /// A few lines of `events` around the given sequence numbers, for a failure message.
    public static func excerpt(of events: [HistoryEvent], around sequences: [Int], radius: Int = 4) -> String {
        var shown = Set<Int>()
        for sequence in sequences {
            for index in max(0, sequence - radius)...min(events.count - 1, sequence + radius) where index >= 0 {
                shown.insert(index)
            }
        }
        var lines: [String] = []
        var previous = -1
        for index in shown.sorted() {
            if previous >= 0 && index != previous + 1 { lines.append("  …") }
            lines.append("  " + events[index].description + (sequences.contains(index) ? "   <==" : ""))
            previous = index
        }
        return lines.joined(separator: "\n")
    }
}
