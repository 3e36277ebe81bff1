// habitat-server [--variant floor|tasklocal|swift-dependencies|habitat] [--port N]
//
// Serves the example app on 127.0.0.1 (port 8080 by default). `--variant` picks how the load
// test's route `GET /load/me` passes per-request values; the app's own routes always use Habitat.
import Foundation
import Hummingbird
import ServerApp

let arguments = CommandLine.arguments.dropFirst()
func value(of option: String) -> String? {
    arguments.firstIndex(of: option).flatMap { arguments.index(after: $0) < arguments.endIndex ? arguments[arguments.index(after: $0)] : nil }
}
guard let variant = Variant(rawValue: value(of: "--variant") ?? "habitat") else {
    FileHandle.standardError.write(Data("habitat-server: --variant is one of \(Variant.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
    exit(2)
}
let port = value(of: "--port").flatMap(Int.init) ?? 8080
try await buildApplication(variant: variant, port: port).runService()
