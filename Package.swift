// swift-tools-version: 6.2
//
// ConcurrencyKit: locks and boxes, a priority-ordered thread-safe value, an operation-queue manager with retries,
// a short GCD vocabulary and callback routing, in five library modules over one shared base.
//
// The library depends on no package. Benchmarks live in the separate package under `Benchmarks/`.
// `ConcurrencyKitTesting` is a product for tests (a clock that a test moves); the umbrella does not re-export it.

import PackageDescription

/// Settings applied to every target, so that every module is held to the same language rules.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InferIsolatedConformances"),
]

/// The four modules that stand on `AtomicPrimitives` and re-export it.
let upperModules = ["SafeValueCore", "OperationQueuing", "DispatchKit", "CallbackRouting"]

/// The modules that have a test target, `Tests/<Module>Tests`; each test target can use the test clock.
let testedModules = ["AtomicPrimitives", "SafeValueCore", "OperationQueuing", "DispatchKit", "CallbackRouting"]

let package = Package(
    name: "ConcurrencyKit",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "AtomicPrimitives", targets: ["AtomicPrimitives"]),
        .library(name: "SafeValueCore", targets: ["SafeValueCore"]),
        .library(name: "OperationQueuing", targets: ["OperationQueuing"]),
        .library(name: "DispatchKit", targets: ["DispatchKit"]),
        .library(name: "CallbackRouting", targets: ["CallbackRouting"]),
        .library(name: "ConcurrencyKit", targets: ["ConcurrencyKit"]),
        .library(name: "ConcurrencyKitTesting", targets: ["ConcurrencyKitTesting"]),
    ],
    targets: [
        // The lock-order checker's and the wait report's per-thread records, in C (see LockOrderThread, WaitThread),
        // the processor count the spin policy uses (Processors) and the futex calls under the lock word on Linux
        // (Futex).
        .target(name: "ConcurrencyKitCShims"),
        .target(name: "AtomicPrimitives", dependencies: ["ConcurrencyKitCShims"], swiftSettings: swiftSettings),
        .target(
            name: "ConcurrencyKit",
            dependencies: ["AtomicPrimitives"] + upperModules.map { .target(name: $0) },
            swiftSettings: swiftSettings
        ),
        // It stands on AtomicPrimitives for its lock: ThreadSanitizer on Linux does not see `Synchronization.Mutex`.
        .target(name: "ConcurrencyKitTesting", dependencies: ["AtomicPrimitives"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "ConcurrencyKitDemo",
            dependencies: ["ConcurrencyKit"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: ["AtomicPrimitives"],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ConcurrencyKitTests",
            dependencies: ["ConcurrencyKit", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ContractPropertyTests",
            dependencies: ["ConcurrencyKit", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ConcurrencyKitTestingTests",
            dependencies: ["ConcurrencyKitTesting", "TestSupport"],
            swiftSettings: swiftSettings
        ),
    ]
        // DispatchKit reads the wait records' switch for `sync` directly: one load on every `sync`.
        + upperModules.map { module in
            .target(
                name: module,
                dependencies: ["AtomicPrimitives"] + (module == "DispatchKit" ? ["ConcurrencyKitCShims"] : []),
                swiftSettings: swiftSettings
            )
        }
        + testedModules.map {
            .testTarget(
                name: "\($0)Tests",
                dependencies: [.target(name: $0), "ConcurrencyKitTesting", "TestSupport"],
                swiftSettings: swiftSettings
            )
        }
)
