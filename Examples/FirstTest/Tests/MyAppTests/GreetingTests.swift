import HabitatTesting
import Testing
@testable import MyApp

@Test(.environment(appEnvironment, services: AppServices(api: APIClient(fetchName: { _ in "Ada" }))))
func greetsTheMemberByName() async throws {
    #expect(try await greeting(for: 1) == "Hello, Ada")
}

