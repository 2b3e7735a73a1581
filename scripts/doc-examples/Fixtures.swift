// Stand-ins for the reader's own code, used by the examples of the documentation (see scripts/doc-examples.py).
// They print nothing: every line an example checks is printed by the example itself.
import ConcurrencyKit
import Dispatch
import Foundation

/// Fails its first call, succeeds afterwards: for the examples that show a retry.
let firstCallFails = AtomicBox(0)

func failsOnce() -> Bool {
    firstCallFails.mutate { calls in
        calls += 1
        return calls > 1
    }
}

struct UploadError: Error {}

/// A network client whose first upload fails.
struct Client: Sendable {
    func upload(_ file: URL) async throws {
        guard failsOnce() else { throw UploadError() }
    }

    func upload(_ file: URL, completion: @escaping @Sendable ((any Error)?) -> Void) {
        let succeeded = failsOnce()
        DispatchQueue.global().async { completion(succeeded ? nil : UploadError()) }
    }
}

let client = Client()
let file = URL(fileURLWithPath: "/tmp/report.pdf")

func send() -> Bool { failsOnce() }
func pushChanges() -> Bool { failsOnce() }
func authenticate() -> Bool { failsOnce() }

/// A "Try again" button that a user taps every 10 ms for 5 seconds.
struct TryAgainButton {
    func onTap(_ action: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async {
            for _ in 0..<500 {
                action()
                usleep(10_000)
            }
        }
    }
}

let tryAgainButton = TryAgainButton()

struct Document: Sendable {
    var title: String
    var isSaving = false
}

func save(_ document: Document, completion: @escaping @Sendable () -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05, execute: completion)
}

let queuer = Queuer(name: "app")
let images = ["a.png", "b.png", "c.png"]
func render(_ image: String) {}
func upload() {}
func downloadManifest() -> Bool { true }
func publishGallery() {}

final class ThumbnailOperation: ConcurrentOperation, @unchecked Sendable {
    init(_ image: String) {
        super.init(name: image) { _ in render(image) }
    }
}

let first = URL(fileURLWithPath: "/tmp/first")
func download(_ item: Any) {}
let fetch = ConcurrentOperation(name: "fetch") { _ in }
let parse = ConcurrentOperation(name: "parse") { _ in }
let store = ConcurrentOperation(name: "store") { _ in }

func work() {}
func runEverything() {}
func updateBar(_ fraction: Double) {}
func showError(_ error: any Error) {}
let worker = DispatchQueue(label: "worker")
let data = Data([1, 2, 3])
