import Habitat
import ModularApp

appEnvironment.login(user: Member(id: 1, name: "Ada"), token: AuthToken("token-1"))
print(try await Features.profile.load())
print("projects:", try await Features.projects.load().joined(separator: ", "))
print("analytics:", appEnvironment.current.services.analytics.name)
appEnvironment.logout()
print("after logout, projects:", try await Features.projects.load())
