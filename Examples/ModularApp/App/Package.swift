// swift-tools-version:6.2
//
// The app: it composes the two feature packages over one environment and one session.
//
//     swift run modular-app    # signs in, loads both features, signs out
//     swift test               # the composition's tests

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, three levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "ModularApp",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [.executable(name: "modular-app", targets: ["modular-app"])],
    dependencies: [
        .package(path: "../../.."),
        .package(path: "../Profile"),
        .package(path: "../Projects"),
    ],
    targets: [
        .target(name: "ModularApp", dependencies: [
            .product(name: "Habitat", package: habitat),
            .product(name: "ProfileFeature", package: "Profile"),
            .product(name: "ProjectsFeature", package: "Projects"),
        ]),
        .executableTarget(name: "modular-app", dependencies: ["ModularApp"]),
        .testTarget(name: "ModularAppTests", dependencies: ["ModularApp", .product(name: "HabitatTesting", package: habitat)]),
    ],
    swiftLanguageModes: [.v6]
)
