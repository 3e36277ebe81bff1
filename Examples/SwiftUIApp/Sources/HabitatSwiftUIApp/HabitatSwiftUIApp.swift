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

/// The app: a main window on the app's stack, and windows of their own per account (from a
/// home screen's "Open in a new window"), with the sessions restored at launch.
@main
struct HabitatSwiftUIApp: App {
    @StateObject private var session: SessionModel
    @StateObject private var faceID: FaceIDLock
    private let sessions: SessionStore<MainApp>?

    init() {
        let session = SessionModel()
        _session = StateObject(wrappedValue: session)
        let directory = URL.applicationSupportDirectory.appending(path: "Habitat", directoryHint: .isDirectory)
        let sessions = try? AppStorage.sessions(in: directory)
        self.sessions = sessions
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
        // A protected account's token waits for the unlock screen: nothing prompts at launch.
        _faceID = StateObject(wrappedValue: FaceIDLock(sessions: sessions))
    }

    var body: some Scene {
        WindowGroup {
            WindowRoot(session: session, faceID: faceID)
                #if canImport(UIKit)
                .onReceive(NotificationCenter.default.publisher(for: UIApplication.protectedDataDidBecomeAvailableNotification)) { _ in
                    if let sessions { session.protectedDataDidBecomeAvailable(for: sessions) }
                }
                #endif
        }
        // A window per account: its value is the account it shows, kept across launches.
        WindowGroup("Account", for: String.self) { $account in
            AccountWindow(account: $account, faceID: faceID)
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
