import Habitat
import HabitatTesting
import ModularApp
import ProfileFeature
import ProjectsFeature
import Testing

extension AppServices {
    static var mock: AppServices {
        AppServices(
            profile: ProfileServices(fetchBio: { _ in "mock bio" }),
            projects: ProjectsServices(listProjects: { id in ["mine-\(id)"] }),
            analytics: Analytics(name: "recording")
        )
    }
}

@Suite(.environment(appEnvironment, .test(services: .mock)))
struct CompositionTests {
    @Test func oneLoginReachesBothFeatures() async throws {
        appEnvironment.login(user: Member(id: 4, name: "Grace"), token: AuthToken("t"))
        #expect(try await Features.profile.load() == "Grace: mock bio")
        #expect(try await Features.projects.load() == ["mine-4"])
        appEnvironment.logout()
        await #expect(throws: ProfileError.notSignedIn) { try await Features.profile.load() }
        #expect(try await Features.projects.load() == [])
    }

    @Test func theAppsScopeReachesAFeature() async throws {
        appEnvironment.login(user: Member(id: 1, name: "Ada"), token: AuthToken("t"))
        let inside = try await appEnvironment.withEnvironment({ $0.services.profile.fetchBio = { _ in "scoped" } }) {
            try await Features.profile.load()
        }
        #expect(inside == "Ada: scoped")
    }

    @Test func aFeaturesScopeIsSeenByTheApp() {
        let slice = appEnvironment.slice(\.projects)
        let owner = slice.withServices({ $0.ownerID = 99 }) { appEnvironment.current.services.projects.ownerID }
        #expect(owner == 99)
    }

    @Test func aTestRunBuildsNoLiveService() {
        #expect(appEnvironment.current.services.analytics.name == "recording")
        #expect(Analytics.liveBuilds.value == 0)
    }
}
