import Foundation
import Habitat
import HabitatHummingbird
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceContextModule
import Testing

struct Member: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

struct ServerServices: Sendable {}

enum ServerSchema: EnvironmentSchema {
    typealias Services = ServerServices
    typealias User = Member
}

/// What a handler saw, after awaiting, in each of the three task-locals, and what a detached
/// task saw without and with the binding handed over.
struct Seen: ResponseCodable, Equatable {
    var member: String?
    var loggerRequestID: String?
    var contextRequestID: String?
    var loggerMember: String?
    var detachedMember: String?
    var detachedRequestID: String?
    var handedMember: String?
    var handedLoggerRequestID: String?
    var handedContextRequestID: String?
}

func makeApplication(stack: EnvironmentStack<ServerSchema>) -> some ApplicationProtocol {
    let router = Router()
    router.add(middleware: HabitatRequestMiddleware(stack: stack) { request, _, binding in
        guard let name = request.headers[.authorization], let id = Int(name.dropFirst("member-".count)) else {
            throw HTTPError(.unauthorized)
        }
        binding.environment.session = UserSession(user: Member(id: id, name: name), token: AuthToken("token-\(id)"))
        binding.logger[metadataKey: "member"] = "\(name)"
    })
    router.get("seen") { _, _ -> Seen in
        try await Task.sleep(for: .milliseconds(Int.random(in: 1...20)))
        await Task.yield()
        var seen = Seen(
            member: stack.current.currentUser?.name,
            loggerRequestID: Logger.current[metadataKey: "request.id"].map { "\($0)" },
            contextRequestID: RequestID.current?.description,
            loggerMember: Logger.current[metadataKey: "member"].map { "\($0)" }
        )
        let escaped = await Task.detached {
            (stack.current.currentUser?.name, RequestID.current?.description)
        }.value
        seen.detachedMember = escaped.0
        seen.detachedRequestID = escaped.1
        let binding = RequestBinding.current(of: stack)
        let handed = await Task.detached {
            await binding.run(on: stack) {
                (stack.current.currentUser?.name, Logger.current[metadataKey: "request.id"].map { "\($0)" }, RequestID.current?.description)
            }
        }.value
        seen.handedMember = handed.0
        seen.handedLoggerRequestID = handed.1
        seen.handedContextRequestID = handed.2
        return seen
    }
    return Application(router: router, logger: Logger(label: "test"))
}

@Suite struct RequestBindingTests {
    @Test func aHundredConcurrentRequestsEachSeeTheirOwnThreeValues() async throws {
        let stack = EnvironmentStack<ServerSchema>(HabitatEnvironment(services: ServerServices()))
        try await makeApplication(stack: stack).test(.router) { client in
            let results = try await withThrowingTaskGroup(of: (String, Seen).self) { group in
                for index in 1...100 {
                    group.addTask {
                        let name = "member-\(index)"
                        return try await client.execute(uri: "/seen", method: .get, headers: [.authorization: name]) { response in
                            #expect(response.status == .ok)
                            return (name, try JSONDecoder().decode(Seen.self, from: response.body))
                        }
                    }
                }
                return try await group.reduce(into: [(String, Seen)]()) { $0.append($1) }
            }
            #expect(results.count == 100)
            var requestIDs = Set<String>()
            for (name, seen) in results {
                #expect(seen.member == name)
                #expect(seen.loggerMember == name)
                let id = try #require(seen.loggerRequestID)
                #expect(seen.contextRequestID == id, "the logger and the trace context name the same request")
                requestIDs.insert(id)
                #expect(seen.detachedMember == nil, "a detached task doesn't see the request's environment")
                #expect(seen.detachedRequestID == nil, "nor its trace context")
                #expect(seen.handedMember == name)
                #expect(seen.handedLoggerRequestID == id)
                #expect(seen.handedContextRequestID == id)
            }
            #expect(requestIDs.count == 100, "every request has an ID of its own")
        }
        #expect(stack.current.currentUser == nil, "outside requests, nobody is signed in")
    }

    @Test func aRefusedRequestBindsNothing() async throws {
        let stack = EnvironmentStack<ServerSchema>(HabitatEnvironment(services: ServerServices()))
        try await makeApplication(stack: stack).test(.router) { client in
            try await client.execute(uri: "/seen", method: .get) { response in
                #expect(response.status == .unauthorized)
            }
        }
    }
}
