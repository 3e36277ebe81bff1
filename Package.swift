// swift-tools-version:6.2

import PackageDescription

let package = Package(
    name: "Habitat",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "Habitat", targets: ["Habitat"]),
        .library(name: "HabitatPersistence", targets: ["HabitatPersistence"]),
        .library(name: "HabitatOperators", targets: ["HabitatOperators"]),
        .library(name: "HabitatTesting", targets: ["HabitatTesting"]),
        .library(name: "HabitatPersistenceTesting", targets: ["HabitatPersistenceTesting"]),
        .library(name: "HabitatKeychain", targets: ["HabitatKeychain"]),
        .executable(name: "habitat-demo", targets: ["SessionDemo"]),
    ],
    dependencies: [],
    targets: [
        // NB: a few lines of C give Habitat atomics and a thread-local slot on every platform
        // it supports, without requiring macOS 15 / iOS 18 for `Synchronization`.
        .target(name: "_HabitatShims"),
        .target(name: "Habitat", dependencies: ["_HabitatShims"]),
        // Sessions that outlive the process: stores, secret stores, snapshots, autosave, restore,
        // following another process, refresh. An app that keeps nothing doesn't link it.
        .target(name: "HabitatPersistence", dependencies: ["Habitat"]),
        .target(name: "HabitatOperators", dependencies: ["Habitat"]),
        // The Keychain secret store, a product of its own: its Apple binding can't break the
        // other modules, and apps that keep tokens elsewhere don't link it.
        .target(name: "HabitatKeychain", dependencies: ["HabitatPersistence"]),
        // Test helpers (the trait, the test environment, stubs); the only target that imports XCTest and Testing.
        .target(name: "HabitatTesting", dependencies: ["Habitat", "HabitatPersistence"]),
        // Test doubles of the persistence product: stores that record and fail on demand, and a
        // model of the Keychain for the Keychain store.
        .target(name: "HabitatPersistenceTesting", dependencies: ["Habitat", "HabitatPersistence", "HabitatKeychain"]),

        .target(name: "SessionDemoKit", dependencies: ["Habitat", "HabitatPersistence"], path: "Examples/SessionDemoKit"),
        .executableTarget(name: "SessionDemo", dependencies: ["SessionDemoKit"], path: "Examples/SessionDemo"),

        // NB: tests that need a child process run a fixture test of the test bundle itself
        // (see Tests/HabitatTests/StoreWorker.swift): helper executables would be products.
        .testTarget(name: "HabitatTests", dependencies: ["Habitat", "HabitatPersistence", "HabitatTesting", "HabitatPersistenceTesting", "HabitatKeychain", "HabitatOperators"]),
        .testTarget(name: "HabitatTestingTests", dependencies: ["Habitat", "HabitatPersistence", "HabitatTesting", "HabitatPersistenceTesting"]),
        .testTarget(name: "SessionDemoTests", dependencies: ["SessionDemoKit", "SessionDemo"]),
        // What the systems Habitat replaces (../shared/seeds: ios-oss's AppEnvironment, Cely, an
        // app context, a session manager, an app manager) promise their users, as scenarios
        // against Habitat's public API: they guard every later change.
        .testTarget(name: "SeedScenarioTests", dependencies: ["Habitat", "HabitatPersistence", "HabitatTesting", "HabitatOperators"]),
        // Habitat beside the modules an Apple app imports (stand-ins for Security, SwiftUI,
        // Alamofire...) is checked by a package of its own, Tests/Compatibility, which CI runs.
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system && target.name != "_HabitatShims" {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
