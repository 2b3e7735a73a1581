// Stand-ins for the reader's own code, used by the examples of the documentation (see scripts/doc-examples.py).
// They print nothing: every line an example checks is printed by the example itself. They live in a module of their
// own that every example sees without importing it, so an example still needs every import a reader would write:
// nothing imported here reaches the example.
import ConcurrencyKit
import Dispatch
import Foundation

/// Fails its first call, succeeds afterwards: for the examples that show a retry.
public let firstCallFails = AtomicBox(0)

public func failsOnce() -> Bool {
    firstCallFails.mutate { calls in
        calls += 1
        return calls > 1
    }
}

public struct UploadError: Error {}

/// A network client whose first upload fails.
public struct Client: Sendable {
    public func upload(_ file: URL) async throws {
        guard failsOnce() else { throw UploadError() }
    }

    public func upload(_ file: URL, completion: @escaping @Sendable ((any Error)?) -> Void) {
        let succeeded = failsOnce()
        DispatchQueue.global().async { completion(succeeded ? nil : UploadError()) }
    }
}

public let client = Client()
public let file = URL(fileURLWithPath: "/tmp/report.pdf")

public func send() -> Bool { failsOnce() }
public func pushChanges() -> Bool { failsOnce() }
public func authenticate() -> Bool { failsOnce() }

/// A "Try again" button that a user taps every 10 ms for 5 seconds.
public struct TryAgainButton: Sendable {
    public func onTap(_ action: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async {
            for _ in 0..<500 {
                action()
                usleep(10_000)
            }
        }
    }
}

public let tryAgainButton = TryAgainButton()

public struct Document: Sendable {
    public var title: String
    public var isSaving = false

    public init(title: String, isSaving: Bool = false) {
        self.title = title
        self.isSaving = isSaving
    }
}

public func save(_ document: Document, completion: @escaping @Sendable () -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05, execute: completion)
}

public let queuer = Queuer(name: "app")
public let images = ["a.png", "b.png", "c.png"]
public func render(_ image: String) {}
public func upload() {}
public func downloadManifest() -> Bool { true }
public func publishGallery() {}

public final class ThumbnailOperation: ConcurrentOperation, @unchecked Sendable {
    public init(_ image: String) {
        super.init(name: image) { _ in render(image) }
    }
}

public let first = URL(fileURLWithPath: "/tmp/first")
public func download(_ item: Any) {}
public let fetch = ConcurrentOperation(name: "fetch") { _ in }
public let parse = ConcurrentOperation(name: "parse") { _ in }
public let store = ConcurrentOperation(name: "store") { _ in }

public func work() {}
public func runEverything() {}
public func updateBar(_ fraction: Double) {}
public func showError(_ error: any Error) {}
public let worker = DispatchQueue(label: "worker")
public let data = Data([1, 2, 3])
