import Foundation
import Habitat
import HabitatPersistence
import HabitatOperators
import Testing

private struct Config: Codable, Sendable, Equatable { var timeout = 30; var name = "x" }
private struct Holder: Equatable { var config = Config() }

@Suite struct OperatorTests {
    @Test func forwardApplication() {
        #expect((3 |> { $0 * 2 }) == 6)
    }

    @Test func setAndOverWithKeyPaths() {
        let holder = Holder()
        #expect((holder |> \.config.timeout .~ 5).config.timeout == 5)
        #expect((holder |> \.config.timeout %~ { $0 + 1 }).config.timeout == 31)
        #expect(holder.config.timeout == 30)
    }

    @Test func setAndOverWithLenses() {
        let timeout = Lens(\Holder.config) .. Lens(\.timeout)
        #expect(timeout.get(Holder() |> timeout .~ 7) == 7)
        #expect((Holder() |> timeout %~ { $0 * 2 }).config.timeout == 60)
    }

    @Test func updatesComposeLeftToRight() {
        let setOne: @Sendable (Holder) -> Holder = \.config.timeout .~ 1
        let update = setOne <> \.config.timeout %~ { $0 * 10 } <> \.config.name .~ "y"
        let result = Holder() |> update
        #expect(result.config.timeout == 10)
        #expect(result.config.name == "y")
    }

    @Test func composedLensObeysTheLaws() {
        let name = Lens(\Holder.config) .. Lens(\.name)
        let root = Holder()
        #expect(name.get(root |> name .~ "a") == "a")
        #expect((root |> name .~ name.get(root)) == root)
        #expect((root |> name .~ "a" <> name .~ "b") == (root |> name .~ "b"))
    }
}
