// swift-tools-version:6.3
//
// Habitat's benchmarks, side by side with the peers and the physical floor, in one run.
// A package of its own so the library never depends on the harness or the peers.
//
//     bash Benchmarks/compare.sh          # run everything, print the table, write results.tsv

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory, so Habitat's package identity is the
// name of whatever directory the repository was cloned into.
let habitat = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "HabitatBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/pointfreeco/swift-dependencies", exact: "1.17.1"),
        .package(url: "https://github.com/Swinject/Swinject", exact: "2.10.0"),
        // For the request row that binds the logger and the trace context with the environment.
        .package(url: "https://github.com/apple/swift-log.git", from: "1.14.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.6.0"),
    ],
    targets: [
        // What every benchmark measures: the app's types, the floors, the peers' set-up.
        .target(
            name: "BenchSupport",
            dependencies: [
                .product(name: "Habitat", package: habitat),
                .product(name: "HabitatPersistence", package: habitat),
                // NB: `Dependencies` only, never `DependenciesMacros`: the macros pull in
                // swift-syntax, about 12 minutes of release build on these machines.
                .product(name: "Dependencies", package: "swift-dependencies"),
            ],
            path: "BenchSupport"
        ),
        // A feature module that reads through a slice of the app's environment, as a feature package
        // would: compiled apart from the app, so its read is not inlined into the caller.
        .target(name: "BenchFeature", dependencies: [.product(name: "Habitat", package: habitat)], path: "BenchFeature"),
        // glibc's heap statistics, for the bytes each open scope holds.
        .target(name: "BenchHeap", path: "BenchHeap"),
        // The comparison rows, in ordo-one/benchmark.
        .executableTarget(
            name: "HabitatBenchmarks",
            dependencies: [
                "BenchSupport",
                .product(name: "Habitat", package: habitat),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "Swinject", package: "Swinject"),
            ],
            path: "HabitatBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The growth rows (many open scopes, subscribers, document size, churn): workloads with
        // threads, task groups and heap snapshots that a per-iteration harness can't shape.
        .executableTarget(
            name: "habitat-growth",
            dependencies: [
                "BenchSupport", "BenchHeap",
                .product(name: "Habitat", package: habitat),
                .product(name: "HabitatPersistence", package: habitat),
                .product(name: "Dependencies", package: "swift-dependencies"),
            ],
            path: "Growth"
        ),
        // How fast another process's sign-out reaches a following stack, and an idle
        // follower's wake-ups, with the store's change feed and with polling.
        .executableTarget(
            name: "habitat-follow",
            dependencies: [.product(name: "Habitat", package: habitat), .product(name: "HabitatPersistence", package: habitat)],
            path: "Follow"
        ),
        // Runs one operation N times for `instructions.sh`, which counts instructions with
        // callgrind: the stable figure where wall-clock times vary by 30-40% from run to run.
        .executableTarget(
            name: "habitat-instruction-probe",
            dependencies: [
                "BenchSupport", "BenchFeature",
                .product(name: "Habitat", package: habitat),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ],
            path: "InstructionProbe"
        ),
        // What a test's isolation costs, test by test, as Swift Testing runs it: the traits of
        // Habitat and swift-dependencies beside a test with none (`isolation.sh` counts them).
        .testTarget(
            name: "IsolationCost",
            dependencies: [
                "BenchSupport",
                .product(name: "Habitat", package: habitat),
                .product(name: "HabitatTesting", package: habitat),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "DependenciesTestSupport", package: "swift-dependencies"),
            ],
            path: "IsolationCost"
        ),
    ]
)
