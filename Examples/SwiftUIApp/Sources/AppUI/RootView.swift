#if canImport(SwiftUI)
import AppCore
import Habitat
import SwiftUI

/// The first screen: the home screen for a signed-in member, the sign-in form otherwise. It
/// redraws on every login and logout, through the model's `ObservableEnvironment`.
public struct RootView: View {
    @Environment(SessionModel.self) private var session

    public init() {}

    public var body: some View {
        if session.environment.session != nil {
            HomeView()
        } else {
            SignInView()
        }
    }
}

/// The sign-in form.
struct SignInView: View {
    @Environment(SessionModel.self) private var session
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
            Text(session.status).foregroundStyle(.secondary)
        }
    }
}

/// The signed-in member's home: a greeting, the profile feature, and sign-out.
struct HomeView: View {
    @Environment(SessionModel.self) private var session

    var body: some View {
        VStack(spacing: 16) {
            Text(session.greeting).font(.title)
            ProfileView()
            Button("Sign out", role: .destructive) { session.signOut() }
        }
        .padding()
    }
}

/// The profile feature's screen: its model reads the feature's slice of the app's environment.
struct ProfileView: View {
    @State private var model = ProfileModel(environment: appEnvironment.slice(\.profile))

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
        RootView().environment(SessionModel())
    }
}

struct SignInView_Previews: PreviewProvider {
    static var previews: some View {
        SignInView().environment(SessionModel())
    }
}

struct ProfileView_Previews: PreviewProvider {
    static var previews: some View {
        ProfileView()
    }
}
#endif
