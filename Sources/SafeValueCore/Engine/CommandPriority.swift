/// The two priorities a command can be issued with.
@usableFromInline
enum CommandPriority: Sendable {
    /// Runs after every pending highest-priority command.
    case lowest
    /// Runs before every pending lowest-priority command.
    case highest
}
