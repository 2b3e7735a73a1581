// swift-tools-version: 6.1
//
// ConcurrencyKit's benchmarks: a package of its own, so that the library's manifest stays dependency-free.
// Run them with `make bench` at the repository root, which prints each result as a ratio to its baseline.

import PackageDescription

/// One executable target per measured module: `Benchmarks/<Module>Benchmarks`.
let measuredModules = ["AtomicPrimitives", "SafeValueCore", "OperationQueuing", "DispatchKit", "CallbackRouting"]

let benchmarkTargets: [Target] = measuredModules.map { module in
    .executableTarget(
        name: "\(module)Benchmarks",
        dependencies: [
            .product(name: "Benchmark", package: "benchmark"),
            .product(name: module, package: "ConcurrencyKit"),
            "BenchmarkSupport",
        ],
        path: "Benchmarks/\(module)Benchmarks",
        swiftSettings: [.swiftLanguageMode(.v6)],
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
}

let package = Package(
    name: "ConcurrencyKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ConcurrencyKit", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: benchmarkTargets + [
        .target(
            name: "BenchmarkSupport",
            dependencies: [.product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/BenchmarkSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
