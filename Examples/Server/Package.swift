// swift-tools-version:6.2
//
// A Hummingbird server that gives each request its own Habitat environment, and the load test
// that compares it with three other ways to pass per-request values. A package of its own:
// Habitat itself depends on nothing.
//
//     swift run habitat-server                 # the example, on 127.0.0.1:8080
//     swift test                               # its tests
//     bash load.sh                             # the side-by-side load test (bash load.sh --smoke: a few seconds)

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, two levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "HabitatServerExample",
    platforms: [.macOS(.v15)],
    products: [.executable(name: "habitat-server", targets: ["HabitatServer"])],
    dependencies: [
        .package(path: "../.."),
        // The add-on that binds the environment, the logger and the trace context together.
        .package(path: "../../Integrations/HabitatHummingbird"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
        // The purge of expired sessions runs as a service of the application.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        // The OpenAPI part: the runtime the committed generated code uses, and its Hummingbird
        // transport.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", exact: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", exact: "2.1.0"),
        // The members' passwords: PBKDF2 (_CryptoExtras) and constant-time comparison.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
        // Only for the load test's swift-dependencies variant.
        .package(url: "https://github.com/pointfreeco/swift-dependencies.git", exact: "1.17.1"),
    ],
    targets: [
        .target(
            name: "ServerApp",
            dependencies: [
                .product(name: "Habitat", package: habitat),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HabitatHummingbird", package: "HabitatHummingbird"),
                .product(name: "HabitatServerSessions", package: "HabitatHummingbird"),
                .product(name: "HabitatPostgres", package: "HabitatHummingbird"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .executableTarget(name: "HabitatServer", dependencies: ["ServerApp"]),
        .testTarget(
            name: "ServerAppTests",
            dependencies: [
                "ServerApp",
                .product(name: "Habitat", package: habitat),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
