/// The precedence of all of DispatchKit's infix operators: left-associative, above assignment and below addition,
/// so that `queue + block` binds first and `task <> a <> b` chains left to right.
precedencegroup GCDOperatorPrecedence {
    associativity: left
    higherThan: AssignmentPrecedence
    lowerThan: AdditionPrecedence
}

/// Sends a block: `queue <<< block` runs it asynchronously, `group <<< block` runs it in the group,
/// `semaphore <<< block` runs it holding a resource, `lock <<< block` under the lock, `box <<< block` on the value.
infix operator <<< : GCDOperatorPrecedence

/// `queue |<| block` runs the block as a barrier on the queue.
infix operator |<| : GCDOperatorPrecedence

/// `task <> next` chains `next` to run after `task`.
infix operator <> : GCDOperatorPrecedence

/// `semaphore++` gives a resource back.
postfix operator ++

/// `semaphore--` takes a resource, waiting for one.
postfix operator --
