/// App code reads what it needs from the environment.
func greeting(for id: Int) async throws -> String {
    let name = try await appEnvironment.current.services.api.fetchName(id)
    return "Hello, \(name)"
}
