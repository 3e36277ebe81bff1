// The app's one environment: its own services, each feature's services, one session.

import Foundation
public import Habitat
public import ProfileFeature
public import ProjectsFeature

/// The signed-in member, the app's user type.
public struct Member: Codable, Sendable, Equatable {
    public var id: Int
    public var name: String
    public init(id: Int, name: String) { self.id = id; self.name = name }
}

/// An analytics SDK whose set-up is costly: built on first use, never in a test run.
public final class Analytics: Sendable {
    public let name: String
    public init(name: String) {
        self.name = name
        if name == Analytics.liveName { Analytics.liveBuilds.add() }
    }

    static let liveName = "live SDK"
    /// How many live SDKs this process has built: for the test that shows a test run builds none.
    public static let liveBuilds = Tally()
}

/// A count that threads can share.
public final class Tally: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var count = 0
    func add() { lock.withLock { count += 1 } }
    public var value: Int { lock.withLock { count } }
}

/// The app's services: its own, and each feature's, in one value.
public struct AppServices: Sendable, SessionDependent {
    public var profile: ProfileServices
    public var projects: ProjectsServices
    @LazyService public var analytics: Analytics

    /// - Parameter analytics: Built on its first read, not here.
    public init(
        profile: ProfileServices,
        projects: ProjectsServices,
        analytics: @autoclosure @escaping @Sendable () -> Analytics
    ) {
        self.profile = profile
        self.projects = projects
        _analytics = LazyService(wrappedValue: analytics())
    }

    /// Tells each feature who is signed in, in the same step as the login or logout.
    public mutating func sessionChanged(to session: UserSession<Member>?) {
        profile.member = session.map { ProfileMember(id: $0.user.id, name: $0.user.name) }
        projects.ownerID = session?.user.id
    }
}

extension AppServices {
    /// The real world; this example has no server, so the features' calls answer locally.
    public static let live = AppServices(
        profile: ProfileServices(fetchBio: { id in "member #\(id), writes Swift" }),
        projects: ProjectsServices(listProjects: { _ in ["habitat", "docs", "benchmarks"] }),
        analytics: Analytics(name: Analytics.liveName)
    )
}

public enum AppSchema: EnvironmentSchema {
    public typealias Services = AppServices
    public typealias User = Member
}

public let appEnvironment = EnvironmentStack<AppSchema>(live: HabitatEnvironment(services: .live))

/// The one place the app hands each feature its part of the environment.
public enum Features {
    public static var profile: ProfileModel { ProfileModel(environment: appEnvironment.slice(\.profile)) }
    public static var projects: ProjectsModel { ProjectsModel(environment: appEnvironment.slice(\.projects)) }
}
