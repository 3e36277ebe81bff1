// swift-tools-version:6.2
//
// Two dynamic frameworks of an app, each linking Habitat statically: each image holds a copy of
// Habitat's code. `../App` links both (and its test target a third copy, with HabitatTesting),
// to show that Habitat says so at the first read (Tests/LinkedTwice/check.sh).

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, three levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "Frameworks",
    products: [
        .library(name: "FrameworkA", type: .dynamic, targets: ["FrameworkA"]),
        .library(name: "FrameworkB", type: .dynamic, targets: ["FrameworkB"]),
    ],
    dependencies: [.package(path: "../../..")],
    targets: [
        .target(name: "FrameworkA", dependencies: [.product(name: "Habitat", package: habitat)]),
        .target(name: "FrameworkB", dependencies: [.product(name: "Habitat", package: habitat)]),
    ],
    swiftLanguageModes: [.v6]
)
