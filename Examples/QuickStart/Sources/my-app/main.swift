import Foundation
import MyApp

// The app's own data directory, per user: Application Support on Apple platforms,
// $XDG_DATA_HOME (or ~/.local/share) on Linux. The second run finds the first run's session.
let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
print(try await launch(dataDirectory: support.appendingPathComponent("my-app")))
