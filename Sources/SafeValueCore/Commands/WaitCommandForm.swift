/// Which `wait` command blocks: how the report of a blocking call from inside a task, and the main-queue doctor, name
/// it and the async form to write instead — the same command, at the same priority, on the `suspend` schedule, or on
/// the `async` schedule for the manual forms, which the `suspend` schedule does not have.
@usableFromInline
enum WaitCommandForm: Sendable {
    /// `get()`, `read()` and `get(completion:)`.
    case get
    /// `set(newValue:)`.
    case setNewValue
    /// `set { … }`.
    case set
    /// `map { … }`.
    case map
    /// `get(manualCompletion:)`.
    case getManually
    /// `set(manualCompletion:)`.
    case setManually

    /// The blocking call as a user writes it, and its async form, at `priority`.
    ///
    /// Each is a literal: a report names them without building a string on the way to a wait.
    @usableFromInline
    func call(at priority: CommandPriority) -> (api: StaticString, alternative: StaticString) {
        switch (self, priority) {
        case (.get, .lowest):
            ("value.wait.lowestPriority.get()", "await value.suspend.lowestPriority.get()")
        case (.get, .highest):
            ("value.wait.highestPriority.get()", "await value.suspend.highestPriority.get()")
        case (.setNewValue, .lowest):
            ("value.wait.lowestPriority.set(newValue:)", "await value.suspend.lowestPriority.set(newValue:)")
        case (.setNewValue, .highest):
            ("value.wait.highestPriority.set(newValue:)", "await value.suspend.highestPriority.set(newValue:)")
        case (.set, .lowest):
            ("value.wait.lowestPriority.set { … }", "await value.suspend.lowestPriority.set { … }")
        case (.set, .highest):
            ("value.wait.highestPriority.set { … }", "await value.suspend.highestPriority.set { … }")
        case (.map, .lowest):
            ("value.wait.lowestPriority.map { … }", "await value.suspend.lowestPriority.map { … }")
        case (.map, .highest):
            ("value.wait.highestPriority.map { … }", "await value.suspend.highestPriority.map { … }")
        case (.getManually, .lowest):
            (
                "value.wait.lowestPriority.get(manualCompletion:)",
                "value.async(performIn: queue).lowestPriority.get(manualCompletion:)"
            )
        case (.getManually, .highest):
            (
                "value.wait.highestPriority.get(manualCompletion:)",
                "value.async(performIn: queue).highestPriority.get(manualCompletion:)"
            )
        case (.setManually, .lowest):
            (
                "value.wait.lowestPriority.set(manualCompletion:)",
                "value.async(performIn: queue).lowestPriority.set(manualCompletion:)"
            )
        case (.setManually, .highest):
            (
                "value.wait.highestPriority.set(manualCompletion:)",
                "value.async(performIn: queue).highestPriority.set(manualCompletion:)"
            )
        }
    }
}
