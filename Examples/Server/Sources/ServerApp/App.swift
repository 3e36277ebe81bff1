import Foundation
public import Habitat
public import HabitatServerSessions
public import Logging

// The server's environment, as Habitat sees it: the signed-in member, the configuration, and the
// services a handler calls. Each request runs in a scope of its own (RequestEnvironment.swift),
// so handlers and services read `appEnvironment.current` and see only their request's member.

/// A signed-in member of the service.
public struct Member: Codable, Sendable, Hashable {
    public var id: Int
    public var name: String

    public init(id: Int, name: String) {
        self.id = id
        self.name = name
    }
}

/// Server-wide configuration.
public struct ServerConfig: Codable, Sendable, Hashable {
    public var greeting = "Welcome back"
    public init() {}
}

/// What a handler may call. `members`, `projects`, `sessions` and `upstream` are app-wide;
/// `requestID` and `logger` are the request's own, set by the middleware.
public struct ServerServices: Sendable {
    public var members: MemberDirectory
    public var projects: ProjectCatalog
    /// The signed-in members' sessions, shared by every instance of the fleet (in memory by
    /// default; `--backend postgres` for a fleet).
    public var sessions: ServerSessions<MemberSession>
    /// The upstream whose tokens the server holds for its members (`--upstream URL`).
    public var upstream: UpstreamClient?
    /// How long one instance may hold a member's refresh lease: longer than the upstream's timeout.
    public var refreshLease: Duration
    public var requestID: String
    public var logger: Logger

    public init(
        members: MemberDirectory,
        projects: ProjectCatalog,
        sessions: ServerSessions<MemberSession> = ServerSessions(backend: MemorySessionBackend()),
        upstream: UpstreamClient? = nil,
        refreshLease: Duration = .seconds(15),
        requestID: String = "-",
        logger: Logger
    ) {
        self.members = members
        self.projects = projects
        self.sessions = sessions
        self.upstream = upstream
        self.refreshLease = refreshLease
        self.requestID = requestID
        self.logger = logger
    }
}

/// The app's types, named once.
public enum ServerApp: EnvironmentSchema {
    public typealias Services = ServerServices
    public typealias User = Member
    public typealias Config = ServerConfig
}

/// The process's stack. Outside a request it is the base: nobody signed in. Each request gets a
/// scope of its own with its member, request ID and clock.
public let appEnvironment = EnvironmentStack<ServerApp>(
    HabitatEnvironment(
        services: ServerServices(members: MemberDirectory(), projects: ProjectCatalog(), logger: Logger(label: "habitat-server")),
        config: ServerConfig()
    )
)

// NB: a request's services hold the member directory (bearer tokens), the sessions' backend (a
// database client whose configuration has its password) and the request's ID: printed or
// dumped, they show what they are, through the redacting mirrors of the parts.
extension ServerServices: CustomReflectable {
    /// A mirror of the parts, each through its own redacting mirror; the request ID shortened.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "members": members,
            "sessions": sessions,
            "upstream": upstream?.url.host() ?? "none",
            "refreshLease": refreshLease,
            "requestID": requestID.prefix(6) + "…",
            "logger": logger.label,
        ], displayStyle: .struct)
    }
}
