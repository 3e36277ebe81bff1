import Foundation
import Habitat
import HabitatPersistence
import HabitatPersistenceTesting
import HabitatKeychain
import HabitatTesting
import Testing

/// The store's decisions, against the simulated Keychain: no test here can reach a real one.
@Suite struct KeychainSecretStoreTests {
    let keychain = SimulatedKeychain(accessGroups: ["TEAM.app", "TEAM.shared"])
    var secrets: KeychainSecretStore { KeychainSecretStore(service: "com.example.app", calls: keychain.calls) }
    let secret = Data("tok-SECRET-123".utf8)

    @Test func aSecretRoundTripsAndNotFoundIsNil() throws {
        #expect(try secrets.secret(forKey: "token") == nil)
        try secrets.setSecret(secret, forKey: "token")
        #expect(try secrets.secret(forKey: "token") == secret)
        try secrets.setSecret(nil, forKey: "token")
        #expect(try secrets.secret(forKey: "token") == nil)
        try secrets.setSecret(nil, forKey: "token")  // deleting what isn't there is fine
    }

    @Test func aLockedDeviceIsUnavailableNeverAbsent() throws {
        try secrets.setSecret(secret, forKey: "token")
        keychain.device = .beforeFirstUnlock
        #expect {
            try secrets.secret(forKey: "token")
        } throws: { error in
            guard case StoreError.unavailable(let key, let reason) = error else { return false }
            return key == "token" && reason.contains("locked")
        }
        #expect(keychain.storedData(service: "com.example.app", account: "token") == secret)
    }

    @Test func aMissingEntitlementIsItsOwnLoudError() throws {
        keychain.isEntitled = false
        #expect(try secrets.secret(forKey: "token") == nil, "reads say not found, as on recent macOS")
        #expect {
            try secrets.setSecret(secret, forKey: "token")
        } throws: { error in
            guard case StoreError.missingEntitlement(let key, let fix) = error else { return false }
            return key == "token" && fix.contains("Keychain Sharing")
        }
        #expect(throws: StoreError.self) { try secrets.verifyAccess() }
    }

    @Test func anyOtherStatusCarriesTheCodeAndTheSystemsWordsButNeverTheSecret() throws {
        keychain.failNextWrites(with: -26276)
        #expect(throws: StoreError.systemStatus(key: "token", status: -26276, message: "simulated keychain status -26276")) {
            try secrets.setSecret(secret, forKey: "token")
        }
        keychain.isEntitled = false
        for error in collectErrors() {
            #expect(!"\(error)".contains("tok-SECRET"))
            #expect(!error.localizedDescription.contains("tok-SECRET"))
        }
    }

    private func collectErrors() -> [StoreError] {
        var errors: [StoreError] = []
        keychain.failNextWrites(with: -25308, -34018, -50)
        for _ in 0..<3 {
            do { try secrets.setSecret(secret, forKey: "token") } catch { errors.append(error) }
        }
        do { try secrets.setSecret(Data(count: 20_000), forKey: "token") } catch { errors.append(error) }
        return errors
    }

    @Test func aWriteAddsThenUpdatesAndAFailedUpdateKeepsTheOldSecret() throws {
        try secrets.setSecret(Data("old".utf8), forKey: "token")
        try secrets.setSecret(Data("new".utf8), forKey: "token")
        #expect(try secrets.secret(forKey: "token") == Data("new".utf8))
        // The add finds the item; the update then fails (the device locked meanwhile, say).
        keychain.failNextWrites(with: KeychainStatus.duplicateItem, KeychainStatus.interactionNotAllowed)
        #expect(throws: StoreError.self) { try secrets.setSecret(Data("newest".utf8), forKey: "token") }
        #expect(try secrets.secret(forKey: "token") == Data("new".utf8), "the previous secret is still there")
        let deletes = keychain.receivedCalls.filter { if case .delete = $0 { true } else { false } }
        #expect(deletes.isEmpty, "a write never deletes first")
    }

    @Test func itemsAreAfterFirstUnlockThisDeviceOnlyByDefaultAndMoveClassOnTheirNextWrite() throws {
        let strict = KeychainSecretStore(service: "com.example.app", accessibility: .whenUnlockedThisDeviceOnly, calls: keychain.calls)
        try strict.setSecret(secret, forKey: "token")
        #expect(keychain.storedAccessibility(service: "com.example.app", account: "token") == .whenUnlockedThisDeviceOnly)
        try secrets.setSecret(secret, forKey: "token")
        #expect(keychain.storedAccessibility(service: "com.example.app", account: "token") == .afterFirstUnlockThisDeviceOnly)
        keychain.device = .locked
        #expect(try secrets.secret(forKey: "token") == secret, "readable while locked after the first unlock")
        try secrets.setSecret(Data("rotated".utf8), forKey: "token")
        #expect(throws: StoreError.self) { try strict.setSecret(Data("x".utf8), forKey: "other") }
    }

    @Test func everyQueryNamesTheAccessGroupDeletesToo() throws {
        let shared = KeychainSecretStore(service: "com.example.app", accessGroup: "TEAM.shared", calls: keychain.calls)
        try shared.setSecret(secret, forKey: "token")
        _ = try shared.secret(forKey: "token")
        try shared.setSecret(nil, forKey: "token")
        #expect(keychain.receivedCalls.count == 3)
        for call in keychain.receivedCalls {
            switch call {
            case .add(let item), .copy(let item), .update(let item), .delete(let item):
                #expect(item == KeychainItem(service: "com.example.app", account: "token", accessGroup: "TEAM.shared"))
            }
        }
        let foreign = KeychainSecretStore(service: "com.example.app", accessGroup: "OTHER.group", calls: keychain.calls)
        #expect(throws: StoreError.self) { try foreign.setSecret(secret, forKey: "token") }
    }

    @Test func aDeleteInOneGroupLeavesTheOtherGroupsItem() throws {
        let app = KeychainSecretStore(service: "s", accessGroup: "TEAM.app", calls: keychain.calls)
        let shared = KeychainSecretStore(service: "s", accessGroup: "TEAM.shared", calls: keychain.calls)
        try app.setSecret(Data("a".utf8), forKey: "token")
        try shared.setSecret(Data("b".utf8), forKey: "token")
        try app.setSecret(nil, forKey: "token")
        #expect(try shared.secret(forKey: "token") == Data("b".utf8))
    }

    @Test func verifyAccessWritesReadsAndDeletesAProbe() throws {
        try secrets.verifyAccess()
        #expect(keychain.itemCount == 0)
        keychain.device = .beforeFirstUnlock
        #expect(throws: StoreError.self) { try secrets.verifyAccess() }
    }

    @Test func aSecretTooLargeForTheKeychainIsRefused() {
        #expect(throws: StoreError.tooLarge(path: "keychain item com.example.app/token", size: 20_000, limit: 16_384)) {
            try secrets.setSecret(Data(count: 20_000), forKey: "token")
        }
        #expect(keychain.itemCount == 0)
    }

    @Test func notFoundIsFinalByDefaultOnlyWhereDataProtectionCantHideItems() {
        #expect(secrets.reportsMissingReliably == KeychainSecretStore.notFoundIsFinalOnThisPlatform)
        #expect(!KeychainSecretStore(calls: keychain.calls).service.isEmpty)
    }
}
