// Habitat's public names used unqualified in a file that also imports what an iOS app imports
// at the same time (SwiftUI, Alamofire, the Facebook SDK, pointfree's IssueReporting, stood in
// for by modules that declare the same names, plus the real Foundation and Observation). The
// test is that this file compiles: a Habitat name that clashed would be ambiguous here.

import AlamofireStandIn
import FacebookStandIn
import Foundation
import HabitatTesting
import IssueReportingStandIn
import Observation
import SwiftUIStandIn

private struct Account: Codable, Sendable, Equatable { var id: Int; var name: String }
private struct RemoteConfig: Codable, Sendable { var timeout = 30 }
private struct ProfileAPI: Sendable {
    var fetchName: @Sendable (Int) async throws -> String
    static let unimplemented = ProfileAPI(fetchName: unimplementedEndpoint("ProfileAPI.fetchName"))
}
private struct AppServices: Sendable, SessionDependent {
    var api = ProfileAPI.unimplemented
    var bearer: AuthToken?
    mutating func sessionChanged(to session: UserSession<Account>?) { bearer = session?.token }
}
private enum MyApp: EnvironmentSchema {
    typealias Services = AppServices
    typealias User = Account
    typealias Config = RemoteConfig
}

private let AppEnvironment = EnvironmentStack<MyApp>(HabitatEnvironment(services: AppServices(), config: RemoteConfig()))

/// A SwiftUI-shaped view that reads SwiftUI's environment and Habitat's side by side.
private struct ProfileView: View {
    @Environment(\.dismiss) var dismiss
    var environment: HabitatEnvironment<MyApp> { AppEnvironment.current }
    var session: UserSession<Account>? { environment.session }
}

@Suite struct NameClashTests {
    @Test func habitatsNamesStandBesideSwiftUIAlamofireFacebookAndIssueReporting() async throws {
        let network = Session.default               // Alamofire's
        let facebook = AccessToken(tokenString: "fb") // the Facebook SDK's
        reportIssue(nil)                            // IssueReporting's
        let placeholder: Int = unimplemented("x", placeholder: 0)
        #expect(placeholder == 0)
        _ = (network, facebook)

        await AppEnvironment.withEnvironment({ $0 = .test(services: AppServices(), config: RemoteConfig()) }) {
            AppEnvironment.login(user: Account(id: 1, name: "Ada"), token: AuthToken("s3cr3t"))
            let session: UserSession<Account>? = AppEnvironment.current.session
            #expect(session?.user.name == "Ada")
            #expect(AppEnvironment.current.services.bearer?.secret == "s3cr3t")
            await withKnownIssue("expected, not a failure: every endpoint is unimplemented in this test") {
                _ = try await AppEnvironment.current.services.api.fetchName(1)
            }
        }
    }
}
