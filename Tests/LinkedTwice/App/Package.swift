// swift-tools-version:6.2
//
// An app over two dynamic frameworks that each hold a copy of Habitat (../Frameworks): its
// program reads both, and its tests read framework A's stack beside the test bundle's own copy.

import Foundation
import PackageDescription

let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "App",
    dependencies: [.package(path: "../Frameworks"), .package(path: "../../..")],
    targets: [
        .executableTarget(name: "two-frameworks", dependencies: [
            .product(name: "FrameworkA", package: "Frameworks"),
            .product(name: "FrameworkB", package: "Frameworks"),
        ]),
        .testTarget(name: "AppTests", dependencies: [
            .product(name: "FrameworkA", package: "Frameworks"),
            .product(name: "HabitatTesting", package: habitat),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
