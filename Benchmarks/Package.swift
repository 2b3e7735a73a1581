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
        // The alternatives users would pick instead, for the consumer-shape comparison only.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
    ],
    targets: benchmarkTargets + [
        // ConcurrencyKit as an app uses it, through the umbrella, next to the alternatives.
        .executableTarget(
            name: "ConsumerBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ConcurrencyKit", package: "ConcurrencyKit"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "OpenCombine", package: "OpenCombine"),
                "BenchmarkSupport",
            ],
            path: "Benchmarks/ConsumerBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The lock-order checker's cost in a consumer's debug build (`make checker-cost`): no harness, the checker is
        // compiled out of the release builds the harness measures.
        .executableTarget(
            name: "DebugCheckerCost",
            dependencies: [.product(name: "AtomicPrimitives", package: "ConcurrencyKit")],
            path: "Benchmarks/DebugCheckerCost",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Issue 26's scaling rows (`make bench-scale`): each contended path from 1 thread to the core count and past
        // it, next to its anchors in one process. No harness: a plain executable that prints JSON for
        // Benchmarks/scale.py, and that `make bench-scale-static` links with the Swift runtime for other machines.
        // It lives in Standalone/ because the benchmark plugin runs, as a harness benchmark, every executable whose
        // folder sits in a folder named Benchmarks.
        .executableTarget(
            name: "ScalingBenchmarks",
            dependencies: [
                .product(name: "ConcurrencyKit", package: "ConcurrencyKit"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Benchmarks/Standalone/ScalingBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "BenchmarkSupport",
            dependencies: [.product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/BenchmarkSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
