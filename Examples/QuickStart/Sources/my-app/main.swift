import Foundation
import MyApp

// A directory of the app's own: the second run finds the first run's session there.
let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("my-app-data")
print(try await launch(dataDirectory: dataDirectory))
