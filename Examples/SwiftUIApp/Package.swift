// swift-tools-version:6.2
//
// A SwiftUI app on Habitat, as Xcode 26 creates them (main-actor by default), from iOS 16 /
// macOS 13: an `App` with a main window and windows of their own per account (`WindowGroup(for:)`),
// views that follow the session through `PublishedEnvironment`, sign-in, sign-out and account
// switching from a view, a feature view whose model reads a slice, previews on the preview
// environment, the Keychain store, a "Require Face ID" setting per account with its unlock
// screen, and the iOS launch rule. Its views are type-checked for iOS and macOS by
// Scripts/check-apple.sh; its logic (AppCore) is built and tested on Linux too.
//
//     swift test    # AppCore's tests, in Swift Testing and XCTest

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, two levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let mainActorByDefault: [SwiftSetting] = [.defaultIsolation(MainActor.self)]

let package = Package(
    name: "SwiftUIApp",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [.executable(name: "habitat-swiftui", targets: ["HabitatSwiftUIApp"])],
    dependencies: [.package(path: "../..")],
    targets: [
        // What the app knows and does, without UI: the schema, the stack, the models.
        .target(
            name: "AppCore",
            dependencies: [
                .product(name: "Habitat", package: habitat),
                .product(name: "HabitatPersistence", package: habitat),
                .product(name: "HabitatKeychain", package: habitat),
            ],
            swiftSettings: mainActorByDefault
        ),
        // The views (Apple platforms only; empty elsewhere).
        .target(name: "AppUI", dependencies: ["AppCore"], swiftSettings: mainActorByDefault),
        // The `App` and its scene.
        .executableTarget(name: "HabitatSwiftUIApp", dependencies: ["AppCore", "AppUI"], swiftSettings: mainActorByDefault),
        .testTarget(
            name: "AppCoreTests",
            dependencies: [
                "AppCore",
                .product(name: "HabitatTesting", package: habitat),
                .product(name: "HabitatPersistenceTesting", package: habitat),
            ],
            swiftSettings: mainActorByDefault
        ),
        // XCTest's test cases are not main-actor types: this target keeps the default isolation.
        .testTarget(name: "AppCoreXCTests", dependencies: ["AppCore", .product(name: "HabitatTesting", package: habitat)]),
    ],
    swiftLanguageModes: [.v6]
)
