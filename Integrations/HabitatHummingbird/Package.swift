// swift-tools-version:6.2
//
// Habitat for Hummingbird servers: one middleware that binds a request's Habitat environment,
// its logger (swift-log's `Logger.current`) and its trace context (`ServiceContext.current`) in
// one step, and one value that hands all three to detached work. An add-on package: the
// Habitat package itself depends on nothing.
//
//     swift test    # the add-on's tests (Examples/Server uses it too); with HABITAT_POSTGRES_URL
//                   # set, the session backend's tests also run on that PostgreSQL

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, two levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "HabitatHummingbird",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HabitatHummingbird", targets: ["HabitatHummingbird"]),
        // Sessions shared by a fleet of instances: the backend protocol, versioned typed
        // sessions, fleet-wide refresh leases and an in-memory backend (no database).
        .library(name: "HabitatServerSessions", targets: ["HabitatServerSessions"]),
        // The same on PostgreSQL.
        .library(name: "HabitatPostgres", targets: ["HabitatPostgres"]),
    ],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.14.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
        // SHA-256 of session IDs (postgres-nio depends on it too).
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
    ],
    targets: [
        .target(
            name: "HabitatHummingbird",
            dependencies: [
                .product(name: "Habitat", package: habitat),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "HabitatServerSessions",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "HabitatPostgres",
            dependencies: [
                "HabitatServerSessions",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HabitatServerSessionsTests",
            dependencies: ["HabitatServerSessions", "HabitatPostgres"]
        ),
        .testTarget(
            name: "HabitatHummingbirdTests",
            dependencies: [
                "HabitatHummingbird",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
