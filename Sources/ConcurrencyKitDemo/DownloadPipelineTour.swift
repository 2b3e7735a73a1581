import ConcurrencyKit
import Dispatch
import Foundation

/// All five modules together: a simulated download pipeline.
///
/// A `Queuer` fetches a manifest (a flaky step, retried), downloads files in a `GroupOperation`, and indexes them;
/// downloaded files go into a `QueueSafeValue` cache, where urgent files are written at the highest priority; a
/// `GCDTimer` reports progress; each finished file is announced through a `CallbackSubject` whose UI subscriber runs
/// on the main queue via `CallbackQueue`; `AtomicBox` counters feed the summary.
enum DownloadPipelineTour {
    private struct Counters {
        var attempts = 0
        var transferred = 0
        var downloaded = 0
        var bytes = 0
    }

    static func run() {
        print("\n== All together: a download pipeline")
        let files = ["index.html", "app.js", "style.css", "logo.png", "URGENT-hotfix.patch", "data.json"]
        let counters = AtomicBox(Counters())
        let cache = QueueSafeValue(value: [String: Int]())
        let cacheQueue = DispatchQueue(label: "tour.cache")
        let announcements = CallbackSubject<String, Never>()
        let uiUpdates = AtomicBox<[String]>([])
        let allAnnounced = CountingSemaphore(.barrier)

        let ui = announcements.subscribe(on: .mainAsync) { file in
            let seen = uiUpdates.mutate { updates -> Int in
                updates.append(file)
                return updates.count
            }
            print("  [main queue: \(CallbackQueue.isOnMainQueue)] UI shows \(file) (\(seen)/\(files.count))")
            if seen == files.count { allAnnounced.signal() }
        }

        let progress = GCDTimer.scheduleWithInterval(0.05, onQueue: GCDQueue(name: "tour.progress"), repeating: 0.05) {
            let now = counters.value
            print("  [timer] \(now.transferred)/\(files.count) transferred, \(now.downloaded) cached")
        }

        // A compaction holds the cache until every download has landed: their writes queue, urgent ones first.
        let writeOrder = AtomicBox<[String]>([])
        let compactionDone = AtomicBox<CommandCompletionClosure?>(nil)
        cache.async(performIn: cacheQueue).highestPriority.set(manualCompletion: { _, done in
            print("  [cache] compaction holds the cache while downloads land")
            compactionDone.mutate { $0 = done }
        })

        let manifest = ConcurrentOperation(name: "manifest") { operation in
            counters.mutate { $0.attempts += 1 }
            operation.success = operation.currentAttempt >= 2  // the first fetch times out
            print("  [queuer] manifest attempt \(operation.currentAttempt): \(operation.success ? "ok" : "timed out")")
        }
        let downloads = GroupOperation(
            files.enumerated().map { position, file in
                ConcurrentOperation(name: file) { _ in
                    Thread.sleep(forTimeInterval: 0.03 * Double(position + 1))  // simulated transfer time
                    counters.mutate { $0.transferred += 1 }
                    let size = file.utf8.count * 1_024
                    let urgent = file.hasPrefix("URGENT")
                    let command =
                        urgent
                        ? cache.async(performIn: cacheQueue).highestPriority
                        : cache.async(performIn: cacheQueue).lowestPriority
                    command.set(
                        accessClosure: { entries in
                            entries[file] = size
                            writeOrder.mutate { $0.append(file) }
                        },
                        completion: { _ in
                            counters.mutate {
                                $0.downloaded += 1
                                $0.bytes += size
                            }
                            CallbackQueue.untouch.execute { announcements.send(file) }
                        }
                    )
                }
            },
            completionHandler: {
                print("  [queuer] every download has landed; compaction done, queued cache writes run")
                compactionDone.value?()
            }
        )
        let finished = CountingSemaphore(.barrier)
        let index = ConcurrentOperation(name: "index") { _ in
            let entries = cache.wait.lowestPriority.map { $0.keys.sorted() }
            print("  [queuer] indexed \((try? entries.get().count) ?? 0) cached files")
        }

        let queuer = Queuer(name: "tour.pipeline", maxConcurrentOperationCount: 3)
        queuer.addChainedOperations(manifest, downloads, index) { finished.signal() }

        let pipelineDone = finished.wait(.now() + .seconds(10)) == .success
        let uiDone = allAnnounced.wait(.now() + .seconds(10)) == .success
        progress.stop()

        let summary = counters.value
        let cached = (try? cache.wait.lowestPriority.get().get()) ?? [:]
        print("Summary: pipeline finished: \(pipelineDone); UI saw every file: \(uiDone)")
        print("  manifest attempts: \(summary.attempts); files downloaded: \(summary.downloaded)/\(files.count)")
        print("  bytes: \(summary.bytes); cached files: \(cached.count); UI updates: \(uiUpdates.value.count)")
        print("  cache writes, in order: \(writeOrder.value)")
        withExtendedLifetime(ui) {}
    }
}
