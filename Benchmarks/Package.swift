// swift-tools-version: 6.1
//
// ConcurrencyKit's benchmarks: a package of its own, so that the library's manifest stays dependency-free.
// Run them with `make bench` at the repository root, which prints each result as a ratio to its baseline.

import PackageDescription

let package = Package(
    name: "ConcurrencyKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ConcurrencyKit", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "AtomicPrimitivesBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "AtomicPrimitives", package: "ConcurrencyKit"),
            ],
            path: "Benchmarks/AtomicPrimitivesBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
