// swift-tools-version:6.2
//
// A feature package: it depends on Habitat and nothing else, neither the app nor the other
// feature, and its tests run without either.

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, three levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "ProfileFeature",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [.library(name: "ProfileFeature", targets: ["ProfileFeature"])],
    dependencies: [.package(path: "../../..")],
    targets: [
        .target(name: "ProfileFeature", dependencies: [.product(name: "Habitat", package: habitat)]),
        .testTarget(name: "ProfileFeatureTests", dependencies: ["ProfileFeature"]),
        .testTarget(name: "ProfileFeatureXCTests", dependencies: ["ProfileFeature"]),
    ],
    swiftLanguageModes: [.v6]
)
