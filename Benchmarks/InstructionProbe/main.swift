// Runs one operation N times, for `instructions.sh` to count instructions with callgrind.
// Instruction counts are stable where wall-clock times on these machines vary by 30-40%.
// Each operation has the same loop shape and does the same work as its row in the harness.
//
//     habitat-instruction-probe OPERATION COUNT

import BenchFeature
import BenchSupport
import Dependencies
import Foundation
import Habitat
import Logging
import ServiceContextModule

let stack = EnvironmentStack<BenchApp>(makeEnvironment())
let token = AuthToken("t")

/// The app of the feature rows: its own services and a feature's, as `Examples/ModularApp` has.
struct ComposedServices: Sendable {
    var api = "live"
    var analytics = "live"
    var feature = FeatureNeeds(timeout: 30, endpoint: "live")
}
enum ComposedApp: EnvironmentSchema { typealias Services = ComposedServices }
let composed = EnvironmentStack<ComposedApp>(HabitatEnvironment(services: ComposedServices()))
let featureSlice = composed.slice(\.feature)

/// The feature rows' floor: the same field read by a function of the app, not inlined, as the
/// feature's function is not.
@inline(never)
func appTimeout() -> Int { composed.current.services.feature.timeout }

/// The request ID in the trace context, as HabitatHummingbird's `RequestID.Key`.
enum BenchRequestIDKey: ServiceContextKey { typealias Value = Int }

/// Opens `depth` scopes one inside the other, reads in the innermost, then ends them all: what a
/// server's event loops do, starting a batch of requests before any of them ends.
func nestScopes(_ depth: Int) {
    guard depth > 0 else { return sink(stack.current.config.timeout) }
    stack.withEnvironment({ $0.config.timeout = depth }) { nestScopes(depth - 1) }
}

/// An app's environment of the size apps have (the benchmark app's is two short strings, an `Int` and
/// a dictionary): clients and closures for services, a user with an email, a signed-in session.
final class RichClient: Sendable { let baseURL = "https://api.example.com" }
struct RichServices: Sendable {
    var api = RichClient()
    var images = RichClient()
    var fetchProfile: @Sendable (Int) -> String = { "member \($0)" }
    var track: @Sendable (String) -> Void = { _ in }
    var isEnabled: @Sendable (String) -> Bool = { _ in false }
    var log: @Sendable (String) -> Void = { _ in }
}
struct RichUser: Codable, Sendable, Identifiable { var id: Int; var name: String; var email: String }
struct RichConfig: Codable, Sendable {
    var timeout = 30
    var baseURL = "https://api.example.com/v2"
    var flags: [String: Bool] = [:]
}
enum RichApp: EnvironmentSchema {
    typealias Services = RichServices
    typealias User = RichUser
    typealias Config = RichConfig
}
let rich: EnvironmentStack<RichApp> = {
    let stack = EnvironmentStack<RichApp>(HabitatEnvironment(services: RichServices(), config: RichConfig()))
    stack.login(user: RichUser(id: 1, name: "Ada Lovelace", email: "ada@example.com"), token: AuthToken("token-of-ada"))
    return stack
}()
/// The same-work floor of the rich scope row: the environment in a box bound to a bare task-local.
final class RichBox: Sendable {
    let environment: HabitatEnvironment<RichApp>
    init(_ environment: HabitatEnvironment<RichApp>) { self.environment = environment }
}
enum RichLocal { @TaskLocal static var box = RichBox(rich.current) }

/// A lazy service, built before the loop for the published-read row.
struct LazyHolder: Sendable { @LazyService var config: BenchConfig }
let builtLazy = LazyHolder(config: BenchConfig())

let operations: [String: @Sendable (Int) -> Void] = [
    "read": { count in for _ in 0..<count { sink(stack.current.config.timeout) } },
    "read-floor": { count in for _ in 0..<count { sink(plainGlobal.timeout) } },
    "read-swift-dependencies": { count in
        let reader = DependencyReader()
        for _ in 0..<count { sink(reader.config.timeout) }
    },
    "feature-read": { count in for _ in 0..<count { sink(featureTimeout(featureSlice)) } },
    "feature-read-app": { count in for _ in 0..<count { sink(appTimeout()) } },
    "lazy-read": { count in
        sink(builtLazy.config.timeout)
        for _ in 0..<count { sink(builtLazy.config.timeout) }
    },
    "lazy-first-read": { count in
        for index in 0..<count {
            let holder = LazyHolder(config: BenchConfig(timeout: index))
            sink(holder.config.timeout)
        }
    },
    "scoped-read": { count in
        stack.withEnvironment({ $0.config.timeout = 2 }) {
            for _ in 0..<count { sink(stack.current.config.timeout) }
        }
    },
    "scope": { count in
        for index in 0..<count {
            stack.withEnvironment({ $0.config.timeout = index }) { sink(stack.current.config.timeout) }
        }
    },
    "scope-burst": { count in
        // Per scope: `count` scopes, in bursts of 64 open at once.
        for _ in 0..<count / 64 { nestScopes(64) }
    },
    "scope-swift-dependencies": { count in
        let reader = DependencyReader()
        for index in 0..<count {
            withDependencies { $0.benchConfig = BenchConfig(timeout: index) } operation: { sink(reader.config.timeout) }
        }
    },
    "scope-tasklocal-box": { count in
        let box = EnvironmentBox(stack.current)
        for _ in 0..<count {
            BareTaskLocal.$box.withValue(box) { sink(BareTaskLocal.box.environment.config.timeout) }
        }
    },
    "scope-tasklocal-copy-box": { count in
        for index in 0..<count {
            var environment = BareTaskLocal.box.environment
            environment.config.timeout = index
            BareTaskLocal.$box.withValue(EnvironmentBox(environment)) { sink(BareTaskLocal.box.environment.config.timeout) }
        }
    },
    "scope-rich": { count in
        for index in 0..<count {
            rich.withEnvironment({ $0.config.timeout = index }) { sink(rich.current.config.timeout) }
        }
    },
    "scope-rich-tasklocal-copy-box": { count in
        for index in 0..<count {
            var environment = RichLocal.box.environment
            environment.config.timeout = index
            RichLocal.$box.withValue(RichBox(environment)) { sink(RichLocal.box.environment.config.timeout) }
        }
    },
    "push-pop-rich": { count in
        for index in 0..<count {
            rich.push { $0.config.timeout = index }
            sink(rich.pop())
        }
    },
    "push-pop-rich-floor": { count in
        var frames = [rich.current]
        for index in 0..<count {
            var copy = frames[frames.count - 1]
            copy.config.timeout = index
            frames.append(copy)
            sink(frames.removeLast())
        }
    },
    "push-pop": { count in
        for index in 0..<count {
            stack.push { $0.config.timeout = index }
            sink(stack.pop())
        }
    },
    "push-pop-floor": { count in
        var frames = [stack.current]
        for index in 0..<count {
            var copy = frames[frames.count - 1]
            copy.config.timeout = index
            frames.append(copy)
            sink(frames.removeLast())
        }
    },
    "push-pop-locked-floor": { count in
        let locked = LockedArrayStack(stack.current)
        for index in 0..<count {
            locked.push(timeout: index)
            sink(locked.pop())
        }
    },
    "login-logout": { count in
        for _ in 0..<count {
            stack.login(user: benchUser, token: token)
            stack.logout()
        }
    },
    "login-login": { count in
        // Two logins per round, each replacing the other's session: "a login", twice, the
        // measure the switch rows are judged against.
        for _ in 0..<count {
            stack.login(user: benchUser, token: token)
            stack.login(user: benchSecondUser, token: AuthToken("u"))
        }
        stack.logout()
    },
    "switch-switch": { count in
        // Two accounts signed in, switched back and forth: two transitions per round, as
        // login-logout has.
        let accounts = EnvironmentStack<BenchApp>(makeEnvironment())
        accounts.login(user: benchUser, token: token)
        accounts.addAccount(user: benchSecondUser, token: AuthToken("u"))
        for _ in 0..<count {
            try! accounts.switchAccount(to: "1")
            try! accounts.switchAccount(to: "2")
        }
    },
    "login-logout-floor": { count in
        let locked = LockedArrayStack(stack.current)
        for _ in 0..<count {
            locked.replaceSession(UserSession(user: benchUser, token: token))
            locked.replaceSession(nil)
        }
        sink(locked)
    },
    "request": { count in
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            let started = Date(timeIntervalSince1970: Double(index))
            stack.withEnvironment({
                $0.session = UserSession(user: user, token: AuthToken(token))
                $0.now = { started }
            }) {
                sink(stack.current.currentUser?.id ?? 0)
                sink(stack.current.session?.token.secret.utf8.count ?? 0)
                sink(Int(stack.current.now().timeIntervalSince1970))
            }
        }
    },
    "request-tasklocal-environment": { count in
        // The request row's work with the environment carried by a bare task-local: copy it,
        // give it the request's session and clock, box it, bind it, read the three, unbind. The
        // same work as a Habitat request scope, where `request-tasklocal` carries three values.
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            let started = Date(timeIntervalSince1970: Double(index))
            var environment = BareTaskLocal.box.environment
            environment.session = UserSession(user: user, token: AuthToken(token))
            environment.now = { started }
            BareTaskLocal.$box.withValue(EnvironmentBox(environment)) {
                sink(BareTaskLocal.box.environment.currentUser?.id ?? 0)
                sink(BareTaskLocal.box.environment.session?.token.secret.utf8.count ?? 0)
                sink(Int(BareTaskLocal.box.environment.now().timeIntervalSince1970))
            }
        }
    },
    "request-rich-tasklocal-environment": { count in
        // The same in the app-sized environment, beside `request-rich`.
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            let started = Date(timeIntervalSince1970: Double(index))
            var environment = RichLocal.box.environment
            environment.session = UserSession(user: RichUser(id: user.id, name: user.name, email: "member@example.com"), token: AuthToken(token))
            environment.now = { started }
            RichLocal.$box.withValue(RichBox(environment)) {
                sink(RichLocal.box.environment.currentUser?.id ?? 0)
                sink(RichLocal.box.environment.session?.token.secret.utf8.count ?? 0)
                sink(Int(RichLocal.box.environment.now().timeIntervalSince1970))
            }
        }
    },
    "request-rich": { count in
        // The request row in an app-sized environment (`RichApp`).
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            let started = Date(timeIntervalSince1970: Double(index))
            rich.withEnvironment({
                $0.session = UserSession(user: RichUser(id: user.id, name: user.name, email: "member@example.com"), token: AuthToken(token))
                $0.now = { started }
            }) {
                sink(rich.current.currentUser?.id ?? 0)
                sink(rich.current.session?.token.secret.utf8.count ?? 0)
                sink(Int(rich.current.now().timeIntervalSince1970))
            }
        }
    },
    "request-bound": { count in
        // What HabitatHummingbird's middleware and RequestBinding.run do, without Hummingbird:
        // the environment, the logger and the trace context, bound together.
        let logger = Logger(label: "bench")
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            let started = Date(timeIntervalSince1970: Double(index))
            var environment = stack.current
            environment.session = UserSession(user: user, token: AuthToken(token))
            environment.now = { started }
            var requestLogger = logger
            requestLogger[metadataKey: "request.id"] = "\(index)"
            var context = ServiceContext.topLevel
            context[BenchRequestIDKey.self] = index
            ServiceContext.withValue(context) {
                withLogger(requestLogger) { _ in
                    stack.withEnvironment(environment) {
                        sink(stack.current.currentUser?.id ?? 0)
                        sink(ServiceContext.current?[BenchRequestIDKey.self] ?? 0)
                        sink(Int(stack.current.now().timeIntervalSince1970))
                    }
                }
            }
        }
    },
    "request-bound-tasklocal": { count in
        // The same three bindings with a bare task-local struct in place of the Habitat scope.
        let logger = Logger(label: "bench")
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            let state = RequestState(user: user, token: token, started: Date(timeIntervalSince1970: Double(index)))
            var requestLogger = logger
            requestLogger[metadataKey: "request.id"] = "\(index)"
            var context = ServiceContext.topLevel
            context[BenchRequestIDKey.self] = index
            ServiceContext.withValue(context) {
                withLogger(requestLogger) { _ in
                    RequestLocal.$state.withValue(state) {
                        sink(RequestLocal.state?.user.id ?? 0)
                        sink(ServiceContext.current?[BenchRequestIDKey.self] ?? 0)
                        sink(Int(RequestLocal.state?.started.timeIntervalSince1970 ?? 0))
                    }
                }
            }
        }
    },
    "request-floor": { count in
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            handleRequest(RequestState(user: user, token: token, started: Date(timeIntervalSince1970: Double(index))))
        }
    },
    "request-tasklocal": { count in
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            RequestLocal.$state.withValue(RequestState(user: user, token: token, started: Date(timeIntervalSince1970: Double(index)))) {
                sink(RequestLocal.state?.user.id ?? 0)
                sink(RequestLocal.state?.token.utf8.count ?? 0)
                sink(Int(RequestLocal.state?.started.timeIntervalSince1970 ?? 0))
            }
        }
    },
    "request-swift-dependencies": { count in
        let reader = RequestDependencyReader()
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            let state = RequestState(user: user, token: token, started: Date(timeIntervalSince1970: Double(index)))
            withDependencies { $0.benchRequest = state } operation: {
                sink(reader.request?.user.id ?? 0)
                sink(reader.request?.token.utf8.count ?? 0)
                sink(Int(reader.request?.started.timeIntervalSince1970 ?? 0))
            }
        }
    },
]

/// The per-request rows again, through the asynchronous scopes a server's middleware enters
/// (`await withEnvironment { ... } operation: { try await next(...) }`).
let asyncOperations: [String: @Sendable (Int) async -> Void] = [
    "request-async": { count in
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            let started = Date(timeIntervalSince1970: Double(index))
            await stack.withEnvironment({
                $0.session = UserSession(user: user, token: AuthToken(token))
                $0.now = { started }
            }) {
                await asyncSink(stack.current.currentUser?.id ?? 0)
                sink(stack.current.session?.token.secret.utf8.count ?? 0)
                sink(Int(stack.current.now().timeIntervalSince1970))
            }
        }
    },
    "request-tasklocal-async": { count in
        for index in 0..<count {
            let (user, token) = requestUsers[index % 1_000]
            await RequestLocal.$state.withValue(RequestState(user: user, token: token, started: Date(timeIntervalSince1970: Double(index)))) {
                await asyncSink(RequestLocal.state?.user.id ?? 0)
                sink(RequestLocal.state?.token.utf8.count ?? 0)
                sink(Int(RequestLocal.state?.started.timeIntervalSince1970 ?? 0))
            }
        }
    },
]

/// An `async` function that doesn't suspend, so the rows' operations are asynchronous closures.
@inline(never)
func asyncSink(_ value: Int) async { sink(value) }

let arguments = CommandLine.arguments
let names = (Array(operations.keys) + Array(asyncOperations.keys)).sorted()
guard arguments.count == 3, names.contains(arguments[1]), let count = Int(arguments[2]) else {
    print("usage: habitat-instruction-probe (\(names.joined(separator: " | "))) COUNT")
    exit(2)
}
// NB: the per-request rows run inside a task, as a server's handlers do: outside one, every
// task-local binding also allocates and frees its record, and the bare task-local row alone
// paid the main actor's executor check (top-level code is main-actor code). The task's start
// is paid once per run and cancels out between the N and 2N runs.
if let operation = asyncOperations[arguments[1]] {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await operation(count)
        done.signal()
    }
    done.wait()
} else if arguments[1].hasPrefix("request"), let operation = operations[arguments[1]] {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        operation(count)
        done.signal()
    }
    done.wait()
} else {
    operations[arguments[1]]!(count)
}
