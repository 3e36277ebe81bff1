import Habitat
import ProfileFeature
import Testing

@Suite struct ProfileModelTests {
    @Test func loadsTheSignedInMembersBio() async throws {
        let services = ProfileServices(fetchBio: { id in "bio of \(id)" }, member: ProfileMember(id: 7, name: "Ada"))
        let model = ProfileModel(environment: .test(services))
        #expect(try await model.load() == "Ada: bio of 7")
    }

    @Test func refusesWhenNobodyIsSignedIn() async {
        let model = ProfileModel(environment: .test(ProfileServices(fetchBio: { _ in "unused" })))
        await #expect(throws: ProfileError.notSignedIn) { try await model.load() }
    }

    @Test func aScopeChangesOneServiceForThisTestOnly() async throws {
        let environment = EnvironmentSlice.test(ProfileServices(fetchBio: { _ in "live" }, member: ProfileMember(id: 1, name: "Grace")))
        let model = ProfileModel(environment: environment)
        let inside = try await environment.withServices({ $0.fetchBio = { _ in "scoped" } }) { try await model.load() }
        #expect(inside == "Grace: scoped")
        #expect(try await model.load() == "Grace: live")
    }
}
