// swift-tools-version:6.2
//
// Habitat beside what an Apple app imports, checked on Linux: stand-in modules with the
// signatures of Security, SwiftUI, Alamofire, the Facebook SDK and IssueReporting, and the tests
// that use them. A package of its own, so the root manifest holds only the products, their
// tests and the demo; CI (.ci/run) runs it.
//
//     swift test

import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory: Habitat's checkout, two levels up.
let habitat = URL(fileURLWithPath: Context.packageDirectory)
    .deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "HabitatCompatibility",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(path: "../..")],
    targets: [
        // The Keychain store's Apple binding (a symbolic link to its source), compiled and run
        // on Linux against a module with Security's signatures.
        .target(name: "SecurityStandIn", path: "StandIns/SecurityStandIn"),
        .testTarget(
            name: "KeychainBindingCheck",
            dependencies: [.product(name: "HabitatKeychain", package: habitat), "SecurityStandIn"],
            swiftSettings: [.define("HABITAT_SECURITY_STANDIN")]
        ),

        // Habitat's names beside the names an iOS app imports at the same time: modules that
        // stand in for SwiftUI, Alamofire, the Facebook SDK and IssueReporting, and a test that
        // uses all of them unqualified in one file.
        .target(name: "SwiftUIStandIn", path: "StandIns/SwiftUIStandIn"),
        .target(name: "AlamofireStandIn", path: "StandIns/AlamofireStandIn"),
        .target(name: "FacebookStandIn", path: "StandIns/FacebookStandIn"),
        .target(name: "IssueReportingStandIn", path: "StandIns/IssueReportingStandIn"),
        .testTarget(
            name: "NameClashTests",
            dependencies: [
                .product(name: "HabitatTesting", package: habitat),
                "SwiftUIStandIn", "AlamofireStandIn", "FacebookStandIn", "IssueReportingStandIn",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
