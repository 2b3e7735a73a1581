// swift-tools-version: 6.2
// A consumer of one granular product: SafeValueCore, which brings AtomicPrimitives with it.
import PackageDescription

let package = Package(
    name: "GranularConsumer",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ConcurrencyKit", path: "../..")],
    targets: [
        .target(name: "VisitCounter", dependencies: [.product(name: "SafeValueCore", package: "ConcurrencyKit")]),
        .executableTarget(name: "visit-counter", dependencies: ["VisitCounter"]),
        .testTarget(name: "VisitCounterTests", dependencies: ["VisitCounter"]),
    ]
)
