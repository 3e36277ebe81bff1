// Linux only: on Apple platforms the real Security framework is there, and tests never reach it.
#if !canImport(Security)
import Foundation
import HabitatKeychain
import SecurityStandIn
import Testing

/// The Apple binding, run against the Security stand-in: what it sends to `SecItem*`.
@Suite struct BindingTests {
    @Test func theBindingSendsOnlyPrimaryKeysToTheDataProtectionKeychain() throws {
        let secrets = KeychainSecretStore(service: "binding.check", accessGroup: "TEAM.shared")
        try secrets.setSecret(Data("one".utf8), forKey: "token")
        try secrets.setSecret(Data("two".utf8), forKey: "token")
        #expect(try secrets.secret(forKey: "token") == Data("two".utf8))
        #expect(StandInKeychain.shared.accessibility(ofAccount: "token") == "cku")
        try secrets.setSecret(nil, forKey: "token")
        #expect(try secrets.secret(forKey: "token") == nil)

        let queries = StandInKeychain.shared.log.filter { $0["svce"] == "binding.check" }
        // add, add (duplicate), the attributes (is it protected?), update, copy, delete, copy
        // (a "not found" while nothing is unlocked asks nothing more)
        #expect(queries.count == 7)
        for query in queries {
            #expect(query["class"] == "genp")
            #expect(query["acct"] == "token")
            #expect(query["agrp"] == "TEAM.shared")
            #expect(query["sync"] == nil)
        }
    }

    @Test func aProtectedItemIsWrittenWithAnAccessControlAndReadWithoutAPrompt() async throws {
        let secrets = KeychainSecretStore(service: "binding.protection")
        try secrets.setSecret(Data("one".utf8), forKey: "protected-token")
        try secrets.setProtection(.userPresence, forKey: "protected-token")
        #expect(StandInKeychain.shared.accessibility(ofAccount: "protected-token") == "accc", "an access control, not an accessibility class alone")
        #expect(try secrets.protection(forKey: "protected-token") == .userPresence, "the protection is read back from the item's attributes")
        await #expect(throws: KeychainUnlockError.notInteractive) { try await secrets.unlock(reason: "no prompt on Linux") }
    }

    @Test func theSystemMessageReachesTheError() throws {
        let secrets = KeychainSecretStore(service: "binding.messages")
        // The binding the store uses by default, `KeychainCalls.system`, called directly.
        #expect(KeychainCalls.system.message(-25300) == "The specified item could not be found in the keychain.")
        #expect(KeychainCalls.system.delete(secrets.item(forKey: "absent")) == -25300)
    }
}
#endif
