import Foundation
import Habitat
import Hummingbird
import HummingbirdTesting
import ServerApp
import Testing

/// The example server, through Hummingbird's test client: each request sees only its own member.
@Suite struct ServerAppTests {
    struct Profile: Decodable, Equatable { var id: Int; var name: String; var greeting: String; var requestID: String }
    struct Projects: Decodable {
        var projects: [String]
        var fromTaskGroup: [String]
        var fromTask: String
        var fromDetachedTask: String
        var capturedForDetachedTask: String
    }
    struct Echo: Decodable { var sent: Int; var user: Int }
    struct ErrorBody: Decodable { struct Message: Decodable { var message: String }; var error: Message }

    func app(_ variant: Variant = .habitat) throws -> some ApplicationProtocol {
        try buildApplication(variant: variant, port: 0)
    }

    func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(buffer: response.body))
    }

    @Test func twoMembersAtOnceEachSeeOnlyThemselvesAcrossAwaitsAndHops() async throws {
        try await app().test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<100 {
                    let id = round % 2 == 0 ? 11 : 12
                    group.addTask {
                        let profile = try await client.execute(uri: "/me", method: .get, headers: self.bearer("tok-\(id)"))
                        #expect(profile.status == .ok)
                        #expect(try self.decode(Profile.self, profile).id == id)
                        let projects = try self.decode(Projects.self, try await client.execute(uri: "/projects", method: .get, headers: self.bearer("tok-\(id)")))
                        let name = "member-\(id)"
                        #expect(projects.projects == ["\(name)'s notes", "\(name)'s garden"], "read by a service after an await")
                        #expect(projects.fromTaskGroup == [name, name], "child tasks follow the request")
                        #expect(projects.fromTask == name, "an unstructured Task follows the request")
                        #expect(projects.fromDetachedTask == "nobody", "a detached task sees the base")
                        #expect(projects.capturedForDetachedTask == name, "unless the value is captured")
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func theOpenAPIHandlerReadsTheMemberFromTheEnvironment() async throws {
        struct Me: Decodable { var id: Int; var name: String; var requestID: String }
        try await app().test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<50 {
                    let id = 11 + round % 3
                    group.addTask {
                        let response = try await client.execute(uri: "/api/me", method: .get, headers: self.bearer("tok-\(id)"))
                        #expect(response.status == .ok)
                        let me = try self.decode(Me.self, response)
                        #expect(me.id == id && me.name == "member-\(id)")
                        #expect(!me.requestID.isEmpty, "the request's ID, bound with the environment")
                    }
                }
                try await group.waitForAll()
            }
            let refused = try await client.execute(uri: "/api/me", method: .get)
            #expect(refused.status == .unauthorized)
        }
    }

    @Test(arguments: Variant.allCases)
    func everyLoadVariantEchoesTheMemberItsTokenNames(_ variant: Variant) async throws {
        try await app(variant).test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in 1...200 {
                    group.addTask {
                        let echo = try self.decode(Echo.self, try await client.execute(uri: "/load/me", method: .get, headers: self.bearer("tok-\(id)")))
                        #expect(echo.sent == id)
                        #expect(echo.user == id)
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test func noTokenIsA401WithAJSONError() async throws {
        try await app().test(.router) { client in
            let response = try await client.execute(uri: "/me", method: .get)
            #expect(response.status == .unauthorized)
            #expect(try decode(ErrorBody.self, response).error.message.contains("missing bearer token"))
        }
    }

    @Test func anUnknownOrExpiredTokenIsA401() async throws {
        let expired = appEnvironment.current.services.members.issueToken(for: 1, expiresAt: Date().addingTimeInterval(-1))
        try await app().test(.router) { client in
            for token in ["tok-nobody", expired.secret] {
                let response = try await client.execute(uri: "/me", method: .get, headers: bearer(token))
                #expect(response.status == .unauthorized)
                #expect(try decode(ErrorBody.self, response).error.message == "unknown or expired token")
            }
        }
    }

    @Test func aMalformedBodyIsA400SayingWhatWasWrong() async throws {
        try await app().test(.router) { client in
            let response = try await client.execute(uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name": 1}"#))
            #expect(response.status == .badRequest)
            #expect(try decode(ErrorBody.self, response).error.message.contains("name"))
            let rename = try await client.execute(uri: "/me", method: .patch, headers: bearer("tok-3"), body: ByteBuffer(string: "{}"))
            #expect(rename.status == .badRequest)
            #expect(try decode(ErrorBody.self, rename).error.message.contains("name"))
        }
    }

    @Test func signInThenUseTheTokenOverALiveServer() async throws {
        struct SignedIn: Decodable { var token: String }
        try await app().test(.live) { client in
            let signIn = try await client.execute(
                uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name":"grace","password":"cobol"}"#)
            )
            #expect(signIn.status == .ok)
            let token = try decode(SignedIn.self, signIn).token
            let profile = try decode(Profile.self, try await client.execute(uri: "/me", method: .get, headers: bearer(token)))
            #expect(profile.id == 2)
            #expect(profile.greeting == "Welcome back, Grace")
            let wrong = try await client.execute(uri: "/signin", method: .post, body: ByteBuffer(string: #"{"name":"grace","password":"x"}"#))
            #expect(wrong.status == .unauthorized)
        }
    }

    @Test func aRenameIsSavedAndSeenOnlyByItsRequest() async throws {
        try await app().test(.router) { client in
            let renamed = try await client.execute(
                uri: "/me", method: .patch, headers: bearer("tok-900"), body: ByteBuffer(string: #"{"name":"Nine Hundred"}"#)
            )
            #expect(try decode(Profile.self, renamed).name == "Nine Hundred")
            let other = try decode(Profile.self, try await client.execute(uri: "/me", method: .get, headers: bearer("tok-901")))
            #expect(other.name == "member-901")
        }
        #expect(appEnvironment.current.currentUser == nil, "the update stayed in the request's scope")
    }

    @Test func outsideAnyRequestTheEnvironmentIsTheBase() async throws {
        try await app().test(.router) { client in
            _ = try await client.execute(uri: "/me", method: .get, headers: bearer("tok-4"))
            #expect(appEnvironment.current.session == nil)
            #expect(appEnvironment.current.services.requestID == "-")
        }
    }
}
