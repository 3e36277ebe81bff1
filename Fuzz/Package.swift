// swift-tools-version:6.2
//
// libFuzzer targets for Habitat's readers of untrusted bytes. A package of its own: a fuzz
// target has no `main` and is built with the fuzzer sanitizer, which the library's own build
// never uses.
//
//     bash Fuzz/run.sh [SECONDS]      # build, then fuzz the store document reader and the session store

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory.
let habitat = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "HabitatFuzz",
    platforms: [.macOS(.v13)],
    dependencies: [.package(path: "..")],
    targets: [
        // The entry point SwiftPM expects of an executable, handing over to libFuzzer.
        .target(name: "FuzzMain", path: "FuzzMain"),
        .executableTarget(
            name: "fuzz-store-document",
            dependencies: ["FuzzMain", .product(name: "Habitat", package: habitat), .product(name: "HabitatPersistence", package: habitat)],
            path: "FuzzStoreDocument",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "fuzz-session-store",
            dependencies: ["FuzzMain", .product(name: "Habitat", package: habitat), .product(name: "HabitatPersistence", package: habitat)],
            path: "FuzzSessionStore",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
