// What both test targets share: an API whose every endpoint fails the test unless overridden,
// a test member, and the test world.

import Foundation
public import Habitat
import HabitatTesting
public import ProfileFeature

extension ProfileAPI {
    /// Every endpoint records a test failure naming it, unless a test overrides it.
    public static let unimplemented = ProfileAPI(
        signIn: unimplementedEndpoint("ProfileAPI.signIn"),
        fetchProfile: unimplementedEndpoint("ProfileAPI.fetchProfile"),
        updateBio: unimplementedEndpoint("ProfileAPI.updateBio")
    )
}

extension Member {
    /// A member who joined in March 2020.
    public static let ada = Member(id: 1, name: "Ada", joined: Date(timeIntervalSince1970: 1_583_020_800))
}

extension HabitatEnvironment where App == ProfileApp {
    /// The test world with unimplemented services.
    public static var profileTest: Self {
        .test(services: ProfileServices(api: .unimplemented), config: ProfileConfig())
    }
}
