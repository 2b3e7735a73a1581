import TestSupport

/// Checks a QueueSafeValue history against the contract's ordering and exclusion rules.
///
/// The history holds, per command id (payload) with its priority (detail, 1 = highest, 0 = lowest):
/// - `issuing`: recorded by the issuer just before the call;
/// - `issued`: recorded only once the command is certainly pending (or has started): after an `async` call returned
///   (it returns after enqueueing), or after the value's own queue count showed it queued (`wait`, `suspend`);
/// - `start` / `end`: the first and last thing its command closure does (for manual completion, `end` comes just
///   before `done` is called, so the value is released after it);
/// - `cancelled`: its task was cancelled while it waited, and it left the queue without running; no rule below
///   expects it to start.
///
/// Rules:
/// 1. Exclusion: no `start` between another command's `start` and `end`.
/// 2. Priority among pending commands: let P be the command that ran just before Y. Every highest-priority X with
///    `issued(X)` before `end(P)` was pending when P released the value, so it must start before a lowest-priority Y.
/// 3. Issue order: if `issued(X)` comes before `issuing(Y)` and X's priority is at least Y's, X starts first (FIFO
///    within a priority; and a lowest issued after a pending highest never overtakes it).
struct CommandOrderChecker {
    let events: [HistoryEvent]

    /// The rule broken first, with the sequence numbers to show; `nil` if the history keeps every rule.
    func firstViolation() -> (rule: String, around: [Int])? {
        var issuing: [Int: Int] = [:]
        var issued: [Int: Int] = [:]
        var start: [Int: Int] = [:]
        var end: [Int: Int] = [:]
        var priority: [Int: Int] = [:]
        var cancelled: Set<Int> = []
        var order: [Int] = []
        var inside: Int?
        for event in self.events {
            switch event.kind {
            case "issuing":
                issuing[event.payload] = event.sequence
                priority[event.payload] = event.detail
            case "issued":
                issued[event.payload] = event.sequence
                priority[event.payload] = event.detail
            case "start":
                if let other = inside {
                    return ("two command closures ran at once (\(other) and \(event.payload))", [event.sequence])
                }
                inside = event.payload
                start[event.payload] = event.sequence
                order.append(event.payload)
            case "end":
                inside = nil
                end[event.payload] = event.sequence
            case "cancelled":
                cancelled.insert(event.payload)
            default:
                break
            }
        }
        for (position, y) in order.enumerated() where position > 0 {
            let previous = order[position - 1]
            guard let yStart = start[y], let previousEnd = end[previous] else { continue }
            for (x, xIssued) in issued where x != y && !cancelled.contains(x) {
                let xStart = start[x] ?? Int.max
                guard xStart > yStart else { continue }
                let xPriority = priority[x] ?? 0
                let yPriority = priority[y] ?? 0
                if xPriority > yPriority && xIssued < previousEnd {
                    return (
                        "pending highest-priority command \(x) started after lowest-priority \(y), "
                            + "both pending when \(previous) released the value",
                        [xIssued, previousEnd, yStart] + (xStart == Int.max ? [] : [xStart])
                    )
                }
                if xPriority >= yPriority, let yIssuing = issuing[y], xIssued < yIssuing {
                    return (
                        "command \(x) (priority \(xPriority)), pending before \(y) (priority \(yPriority)) was "
                            + "issued, started after it",
                        [xIssued, yIssuing, yStart] + (xStart == Int.max ? [] : [xStart])
                    )
                }
            }
        }
        return nil
    }
}
