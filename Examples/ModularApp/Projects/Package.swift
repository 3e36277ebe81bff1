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
    name: "ProjectsFeature",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [.library(name: "ProjectsFeature", targets: ["ProjectsFeature"])],
    dependencies: [.package(path: "../../..")],
    targets: [
        .target(name: "ProjectsFeature", dependencies: [.product(name: "Habitat", package: habitat)]),
        .testTarget(name: "ProjectsFeatureTests", dependencies: ["ProjectsFeature"]),
        .testTarget(name: "ProjectsFeatureXCTests", dependencies: ["ProjectsFeature"]),
    ],
    swiftLanguageModes: [.v6]
)
