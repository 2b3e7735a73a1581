import ConcurrencyKit
import Dispatch

/// A cache behind a `QueueSafeValue`: a slow manual-completion write holds it while routine and urgent commands
/// queue up; urgent ones run first, and all three schedules are used.
enum SafeValueCoreScene {
    static func run() {
        print("\n== SafeValueCore")
        let cache = QueueSafeValue(value: [String]())
        let queue = DispatchQueue(label: "demo.cache")
        let finished = CountingSemaphore(.barrier)
        let hold = AtomicBox<CommandCompletionClosure?>(nil)
        let holding = CountingSemaphore(.barrier)

        cache.async(performIn: queue).lowestPriority.set(manualCompletion: { entries, done in
            entries.append("slow write")
            hold.mutate { $0 = done }
            holding.signal()
        })
        _ = holding.wait(.now() + .seconds(5))
        print("QueueSafeValue: a manual-completion write holds the cache until its done() is called")

        let issued = ["routine 1", "urgent 1", "routine 2", "urgent 2"]
        for label in issued {
            let schedule = cache.async(performIn: queue)
            let command = label.hasPrefix("urgent") ? schedule.highestPriority : schedule.lowestPriority
            command.set(accessClosure: { $0.append(label) })
        }
        print("QueueSafeValue: issued \(issued) while held")
        hold.value?()

        cache.async(performIn: queue).lowestPriority.get { result in
            print("QueueSafeValue: ran in the order \((try? result.get()) ?? [])")
            finished.signal()
        }
        _ = finished.wait(.now() + .seconds(5))

        let nested = cache.wait.lowestPriority.set { _ in
            let inner = cache.wait.lowestPriority.get()
            print("QueueSafeValue: a wait inside a command fails fast: \(inner)")
        }
        print("QueueSafeValue: the outer command still succeeded: \((try? nested.get().count) ?? 0) entries")

        let tasksDone = CountingSemaphore(.barrier)
        Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 1...3 {
                    group.addTask { await cache.suspend.lowestPriority.set { $0.append("task \(index)") } }
                }
            }
            let count = await cache.suspend.lowestPriority.map(\.count)
            print("QueueSafeValue: three tasks appended with suspend, without blocking a thread: \(count)")
            tasksDone.signal()
        }
        _ = tasksDone.wait(.now() + .seconds(5))
    }
}
