// swift-tools-version: 6.2
// A consumer of the umbrella product: import ConcurrencyKit, get all five modules.
import PackageDescription

let package = Package(
    name: "UmbrellaConsumer",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ConcurrencyKit", path: "../..")],
    targets: [
        .target(name: "Pipeline", dependencies: [.product(name: "ConcurrencyKit", package: "ConcurrencyKit")]),
        .executableTarget(name: "pipeline", dependencies: ["Pipeline"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline"]),
    ]
)
