#if canImport(SwiftUI)
import AppCore
import AppUI
import Foundation
import Habitat
import HabitatPersistence
import SwiftUI
#if canImport(UIKit)
import UIKit
#endif

/// The app: one window on the root view, with the session restored at launch.
@main
struct HabitatSwiftUIApp: App {
    @State private var session = SessionModel()
    private let sessions: SessionStore<MainApp>?

    init() {
        let directory = URL.applicationSupportDirectory.appending(path: "Habitat", directoryHint: .isDirectory)
        sessions = try? AppStorage.sessions(in: directory)
        if let sessions {
            #if canImport(UIKit)
            // Before the first unlock (or in a prewarmed launch) the Keychain may say "not
            // found" for a token it holds: the session waits for it until protected data is
            // available (the notification below).
            session.launch(from: sessions, protectedDataAvailable: UIApplication.shared.isProtectedDataAvailable)
            #else
            session.launch(from: sessions)
            #endif
        }
    }

    var body: some Scene {
        WindowGroup {
            RootView()
                .environment(session)
                #if canImport(UIKit)
                .onReceive(NotificationCenter.default.publisher(for: UIApplication.protectedDataDidBecomeAvailableNotification)) { _ in
                    if let sessions { session.protectedDataDidBecomeAvailable(for: sessions) }
                }
                #endif
        }
    }
}
#else
/// Where SwiftUI doesn't exist, the app has nothing to show: its logic is `AppCore`, tested
/// with `swift test`.
@main
enum HabitatSwiftUIApp {
    static func main() {
        print("habitat-swiftui is a SwiftUI app: open Examples/SwiftUIApp in Xcode. Its logic (AppCore) is tested with `swift test`.")
    }
}
#endif
