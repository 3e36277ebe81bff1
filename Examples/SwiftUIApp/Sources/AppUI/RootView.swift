#if canImport(SwiftUI)
import AppCore
import Habitat
import SwiftUI

/// A window's first screen: the home screen for a signed-in member, the unlock screen while
/// their token is behind Face ID, the sign-in form otherwise. It redraws on every login, logout
/// and switch, through the window's `PublishedEnvironment`.
///
/// Give it the window's model and its environment objects (``WindowRoot`` does).
public struct RootView: View {
    @EnvironmentObject private var environment: PublishedEnvironment<MainApp>
    @EnvironmentObject private var faceID: FaceIDLock

    public init() {}

    public var body: some View {
        if environment.session != nil, faceID.needsUnlock {
            UnlockView()
        } else if environment.session != nil {
            HomeView()
        } else {
            SignInView()
        }
    }
}

/// The screen of an account whose token needs Face ID, Touch ID or the passcode: the one
/// place the app prompts, when the user asks.
struct UnlockView: View {
    @EnvironmentObject private var faceID: FaceIDLock

    var body: some View {
        VStack(spacing: 16) {
            Text("This account is locked").font(.title)
            Button("Unlock with Face ID") { Task { await faceID.unlock() } }
            if let problem = faceID.problem { Text(problem).foregroundColor(.secondary) }
        }
        .padding()
    }
}

/// A window: its model, and what its views observe.
public struct WindowRoot: View {
    @ObservedObject private var session: SessionModel
    @ObservedObject private var faceID: FaceIDLock

    /// - Parameters:
    ///   - session: The window's model: `SessionModel()` for the main window,
    ///     `SessionModel(window:)` for a window of its own.
    ///   - faceID: The app's Face ID setting and unlock.
    public init(session: SessionModel, faceID: FaceIDLock) {
        self.session = session
        self.faceID = faceID
    }

    public var body: some View {
        RootView()
            .environmentObject(session)
            .environmentObject(session.environment)
            .environmentObject(faceID)
            .onReceive(session.environment.objectWillChange) { _ in
                // NB: sent before the change is applied: read the setting once it is.
                Task { faceID.update() }
            }
    }
}

/// A window of its own, on an account of its own: the account is the window's value, which
/// the system keeps across launches (`WindowGroup(for:)`).
public struct AccountWindow: View {
    @Binding private var account: String?
    @StateObject private var session: SessionModel
    private let faceID: FaceIDLock

    /// - Parameters:
    ///   - account: The window's value: the account it shows.
    ///   - faceID: The app's Face ID setting and unlock.
    public init(account: Binding<String?>, faceID: FaceIDLock) {
        _account = account
        _session = StateObject(wrappedValue: SessionModel(window: WindowEnvironment(following: appEnvironment, showing: account.wrappedValue)))
        self.faceID = faceID
    }

    public var body: some View {
        WindowRoot(session: session, faceID: faceID)
            .onReceive(session.environment.objectWillChange) { _ in
                // NB: sent before the change is applied; the window's account is known already.
                account = session.accountID
            }
            .onDisappear { session.window?.close() }
    }
}

/// The sign-in form.
struct SignInView: View {
    @EnvironmentObject private var session: SessionModel
    @State private var email = ""
    @State private var failure: String?

    var body: some View {
        Form {
            TextField("Email", text: $email)
            Button("Sign in") {
                Task {
                    do {
                        try await session.signIn(email: email)
                    } catch {
                        failure = error.localizedDescription
                    }
                }
            }
            .disabled(email.isEmpty)
            if let failure { Text(failure) }
            Text(session.status).foregroundColor(.secondary)
        }
    }
}

/// The signed-in member's home: a greeting, the profile feature, the other accounts, a window
/// of its own for this account, and sign-out.
struct HomeView: View {
    @EnvironmentObject private var session: SessionModel
    @EnvironmentObject private var environment: PublishedEnvironment<MainApp>
    @EnvironmentObject private var faceID: FaceIDLock
    @Environment(\.openWindow) private var openWindow

    var body: some View {
        VStack(spacing: 16) {
            Text(session.greeting).font(.title)
            ProfileView()
            Toggle("Require Face ID", isOn: Binding(get: { faceID.isRequired }, set: { on in Task { await faceID.setRequired(on) } }))
            ForEach(environment.otherAccounts, id: \.user.id) { other in
                Button("Switch to \(other.user.name)") { try? session.switchAccount(to: String(other.user.id)) }
            }
            Button("Open in a new window") { openWindow(value: session.accountID ?? "") }
            Button("Sign out", role: .destructive) { session.signOut() }
        }
        .padding()
    }
}

/// The profile feature's screen: its model reads the feature's slice of the app's environment.
struct ProfileView: View {
    @StateObject private var model = ProfileModel(environment: appEnvironment.slice(\.profile))

    var body: some View {
        Text(model.text)
            .task { await model.load() }
    }
}

// NB: `PreviewProvider`, not `#Preview`: the `#Preview` macro's implementation ships only with
// Xcode, so the project's Apple check (which runs the open-source compiler against Apple's SDK)
// can't expand it. A `PreviewProvider` is the same preview, and is type-checked. In a preview,
// `appEnvironment` is the preview environment: Ada signed in, fixture services, nothing live.

struct RootView_Previews: PreviewProvider {
    static var previews: some View {
        WindowRoot(session: SessionModel(), faceID: FaceIDLock(sessions: nil))
    }
}

struct ProfileView_Previews: PreviewProvider {
    static var previews: some View {
        ProfileView()
    }
}
#endif
