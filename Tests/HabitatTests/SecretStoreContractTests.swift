import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatKeychain
import HabitatTesting
import Testing

/// The contract the session engine relies on, held by every `SecretStore` Habitat ships: a
/// missing secret is `nil` (never an error), a write replaces, `nil` deletes (deleting nothing is
/// no error), bytes round-trip exactly, keys never collide, concurrent writers of different keys
/// lose nothing, and `reportsMissingReliably` is what the store says it is.
@Suite struct SecretStoreContractTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case memory, files, keychain, keychainAwaitingUnlock, mock
        var testDescription: String { rawValue }
    }

    /// A fresh store; whatever it lives in lives as long as the returned owner.
    func makeStore(_ backend: Backend) throws -> (store: any SecretStore, reliable: Bool, owner: AnyObject?) {
        switch backend {
        case .memory:
            return (InMemorySecretStore(), true, nil)
        case .files:
            let directory = try TemporaryDirectory()
            return (try FileSecretStore(directory: directory.file("secrets")), true, directory)
        case .keychain, .keychainAwaitingUnlock:
            let keychain = SimulatedKeychain()
            let reliable = backend == .keychain
            return (KeychainSecretStore(service: "com.example.contract", reportsMissingReliably: reliable, calls: keychain.calls), reliable, keychain)
        case .mock:
            return (MockSecretStore(), true, nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func aMissingSecretIsNilAndDeletingNothingIsNoError(_ backend: Backend) throws {
        let (store, reliable, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        #expect(try store.secret(forKey: "absent") == nil)
        try store.setSecret(nil, forKey: "absent")
        #expect(try store.secret(forKey: "absent") == nil)
        #expect(store.reportsMissingReliably == reliable)
    }

    @Test(arguments: Backend.allCases)
    func bytesRoundTripAWriteReplacesAndNilDeletes(_ backend: Backend) throws {
        let (store, _, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        let binary = Data([0, 1, 0xFF, 0, 0x7F, 10, 13, 0])
        try store.setSecret(binary, forKey: "token")
        #expect(try store.secret(forKey: "token") == binary)
        try store.setSecret(Data("rotated".utf8), forKey: "token")
        #expect(try store.secret(forKey: "token") == Data("rotated".utf8))
        try store.setSecret(nil, forKey: "token")
        #expect(try store.secret(forKey: "token") == nil)
        try store.setSecret(Data("again".utf8), forKey: "token")
        #expect(try store.secret(forKey: "token") == Data("again".utf8), "a deleted key can be written again")
    }

    @Test(arguments: Backend.allCases)
    func keysNeverCollide(_ backend: Backend) throws {
        let (store, _, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        let keys = ["a/b", "a%2Fb", "a_2Fb", "..", ".", "habitat.session.token", "habitat.session.token.Ada", "Ada", "ada", "é", ""]
        for (index, key) in keys.enumerated() { try store.setSecret(Data("\(index)".utf8), forKey: key) }
        for (index, key) in keys.enumerated() {
            #expect(try store.secret(forKey: key) == Data("\(index)".utf8), "\(key)")
        }
        try store.setSecret(nil, forKey: "a/b")
        #expect(try store.secret(forKey: "a%2Fb") == Data("1".utf8), "deleting one key leaves its look-alikes")
    }

    @Test(arguments: Backend.allCases)
    func concurrentWritersOfDifferentKeysLoseNothing(_ backend: Backend) async throws {
        let (store, _, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for round in 0..<20 { try store.setSecret(Data("\(writer)-\(round)".utf8), forKey: "writer-\(writer)") }
                }
            }
            try await group.waitForAll()
        }
        for writer in 0..<8 {
            #expect(try store.secret(forKey: "writer-\(writer)") == Data("\(writer)-19".utf8))
        }
    }
}
