// swift-tools-version:6.2
//
// The README's app, whole: every swift block of the README is in one of these files, verbatim
// (Scripts/check-docs.py checks it), and this package builds and tests them.
//
//     swift run my-app     # the app: restores, signs in, greets; run it twice
//     swift test           # its tests, in Swift Testing and XCTest

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, two levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "QuickStart",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [.executable(name: "my-app", targets: ["my-app"])],
    dependencies: [.package(path: "../..")],
    targets: [
        .target(name: "MyApp", dependencies: [
            .product(name: "Habitat", package: habitat),
            .product(name: "HabitatPersistence", package: habitat),   // the session kept between launches
            .product(name: "HabitatKeychain", package: habitat),   // the Keychain store, on Apple platforms
        ]),
        .executableTarget(name: "my-app", dependencies: ["MyApp"]),
        .testTarget(name: "MyAppTests", dependencies: ["MyApp", .product(name: "HabitatTesting", package: habitat)]),
    ],
    swiftLanguageModes: [.v6]
)
