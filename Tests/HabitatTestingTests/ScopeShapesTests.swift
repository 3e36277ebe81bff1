import Foundation
import HabitatTesting
import HabitatPersistence

/// The shapes tests write scopes in, as the docs show them: each must compile and run.
@Suite struct ScopeShapesTests {
    let stack = EnvironmentStack<TestingApp>(HabitatEnvironment<TestingApp>.test(services: Services(), config: Config()))

    func load() async throws -> String { stack.current.locale.identifier }
    func preferredLocale() async -> String { "it_IT" }

    /// NB: `#expect(try await load() == x)` as a closure's only statement doesn't compile,
    /// with this API or any other that takes a closure (`withDependencies` too): Swift decides
    /// whether a closure throws from the `try`s it sees, and it doesn't see one inside a macro's
    /// argument. `try #expect(await ...)` or a closure signature does compile.
    @Test func anAsyncThrowingExpectationInsideAScope() async throws {
        try await stack.withEnvironment({ $0.locale = Locale(identifier: "fr_FR") }) {
            try #expect(await load() == "fr_FR")
        }
        try await stack.withEnvironment({ $0.locale = Locale(identifier: "de_DE") }) { () async throws in
            #expect(try await load() == "de_DE")
        }
    }

    @Test func theChangeMayAwait() async throws {
        let name = await stack.withEnvironment({ environment in
            environment.locale = Locale(identifier: await preferredLocale())
        }) {
            stack.current.locale.identifier
        }
        #expect(name == "it_IT")
    }

    @Test func aSynchronousScopeInAnAsyncTestNeedsNoAwait() async {
        let identifier = stack.withEnvironment({ $0.locale = Locale(identifier: "pt_BR") }) {
            stack.current.locale.identifier
        }
        #expect(identifier == "pt_BR")
    }
}
