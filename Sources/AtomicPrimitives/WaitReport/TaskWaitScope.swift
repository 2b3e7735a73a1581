/// A scope of tasks whose waits in the package are counted: `TestClock.run { }` and the tasks it starts.
///
/// The scope is a task-local value, so the operation's task and every task that inherits its task-local values
/// (child tasks, and tasks made with `Task { }` inside it; not detached ones) are in it. A wait looks the scope up
/// only when it suspends (``TaskWaits/begin(on:as:state:parks:)``), counts itself as parked in it, and uncounts itself
/// when it resumes; each change calls `onChange`, so that the scope's owner looks again.
package final class TaskWaitScope: Sendable {
    /// The scope of the calling task, if any.
    @TaskLocal package static var current: TaskWaitScope?

    private let parkedTasks = AtomicBox<[UInt: Int]>([:], name: "TaskWaitScope")
    private let onChange: @Sendable () -> Void

    /// - Parameter onChange: Called, on the waiting task's thread and under no lock, after each park and unpark.
    package init(onChange: @escaping @Sendable () -> Void) {
        self.onChange = onChange
    }

    /// The tasks of the scope parked in the package's waits now, by ``TaskWaits/currentTask``.
    package var parked: Set<UInt> {
        Set(self.parkedTasks.value.keys)
    }

    func parked(_ entry: TaskWaitEntry) {
        self.parkedTasks.mutate { $0[entry.task, default: 0] += 1 }
        self.onChange()
    }

    func unparked(_ entry: TaskWaitEntry) {
        self.parkedTasks.mutate { parked in
            let count = parked[entry.task, default: 0] - 1
            parked[entry.task] = count > 0 ? count : nil
        }
        self.onChange()
    }
}
