// swift-tools-version:6.2
//
// The README's quick start, whole: an app that injects services and nothing else, and its first
// test. Every swift block of the README's quick start is in one of these files, verbatim
// (Scripts/check-docs.py checks it); CI builds and tests this package.
//
//     swift test

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, two levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "FirstTest",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(path: "../..")],
    targets: [
        .target(name: "MyApp", dependencies: [.product(name: "Habitat", package: habitat)]),
        .testTarget(name: "MyAppTests", dependencies: ["MyApp", .product(name: "HabitatTesting", package: habitat)]),
    ],
    swiftLanguageModes: [.v6]
)
