import Foundation
import Habitat
import HabitatPersistence
import Testing

extension StoreKey where Value == Int {
    static let launches = StoreKey("launches")
}

extension StoreKey where Value == TestConfig {
    static let config = StoreKey("config")
}

/// The behaviours every store shares, run against each backend.
@Suite struct KeyValueStoreContractTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case memory, jsonFile, userDefaults
        var testDescription: String { rawValue }
    }

    /// Makes a fresh store; the directory (or suite) lives as long as the returned owner.
    func makeStore(_ backend: Backend) throws -> (any KeyValueStore, AnyObject?) {
        switch backend {
        case .memory:
            return (InMemoryStore(), nil)
        case .jsonFile:
            let directory = try TemporaryDirectory()
            return (try JSONFileStore(url: directory.file("store.json")), directory)
        case .userDefaults:
            let suite = "habitat-tests-\(UUID().uuidString)"
            let defaults = try #require(UserDefaults(suiteName: suite))
            return (UserDefaultsStore(defaults, prefix: "h."), SuiteCleaner(defaults: defaults, suite: suite))
        }
    }

    final class SuiteCleaner: @unchecked Sendable {
        let defaults: UserDefaults
        let suite: String
        init(defaults: UserDefaults, suite: String) { self.defaults = defaults; self.suite = suite }
        deinit { defaults.removePersistentDomain(forName: suite) }
    }

    @Test(arguments: Backend.allCases)
    func typedKeysRoundTrip(backend: Backend) throws {
        let (store, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        #expect(try store[.launches] == nil)
        try store.set(3, for: .launches)
        try store.set(TestConfig(timeout: 5, features: ["a"]), for: .config)
        #expect(try store[.launches] == 3)
        #expect(try store.value(for: .config) == TestConfig(timeout: 5, features: ["a"]))
        #expect(Set(try store.keys()) == ["launches", "config"])
        try store.remove(.launches)
        #expect(try store[.launches] == nil)
        try store.set(nil, for: .config)
        #expect(try store.keys().isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func aValueThatCantBeEncodedIsATypedErrorNamingWhereAndNothingIsWritten(backend: Backend) throws {
        let (store, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        let ratios = StoreKey<[String: Double]>("ratios")
        #expect(ratios.description == "ratios")
        try store.set(["kept": 0.5], for: ratios)
        // JSON has no NaN: the encoder refuses it, and the error names the key and where.
        #expect(throws: StoreError.encodingFailed(key: "ratios", reason: "the value at 'broken' cannot be encoded")) {
            try store.set(["broken": .nan], for: ratios)
        }
        #expect(try store.value(for: ratios) == ["kept": 0.5], "the stored value stays")
    }

    @Test(arguments: Backend.allCases)
    func rawDataRoundTripsExactly(backend: Backend) throws {
        let (store, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        let binary = Data([0xFF, 0x00, 0xC3, 0x28, 0x80])
        let text = Data("{\"a\": 1.0, \"b\": \"é\"}".utf8)
        try store.write(["binary": binary, "text": text])
        #expect(try store.data(forKey: "binary") == binary)
        #expect(try store.data(forKey: "text") == text)
        try store.write(["binary": nil, "text": Data()])
        #expect(try store.data(forKey: "binary") == nil)
        #expect(try store.data(forKey: "text") == Data())
    }

    @Test(arguments: Backend.allCases)
    func aValueOfTheWrongTypeIsATypedError(backend: Backend) throws {
        let (store, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        try store.setData(Data("\"not a number\"".utf8), forKey: "launches")
        #expect {
            _ = try store[.launches]
        } throws: { error in
            guard case .decodingFailed(let key, _) = error as? StoreError else { return false }
            return key == "launches"
        }
        #expect(try store.data(forKey: "launches") == Data("\"not a number\"".utf8), "the bad value is left alone")
    }

    @Test(arguments: Backend.allCases)
    func scopedStoresKeepNamespacesApart(backend: Backend) throws {
        let (store, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        let ada = store.scoped(to: "user-1")
        let grace = store.scoped(to: "user-2")
        try ada.set(1, for: .launches)
        try grace.set(2, for: .launches)
        try store.set(99, for: .launches)
        #expect(try ada[.launches] == 1)
        #expect(try grace[.launches] == 2)
        #expect(try ada.keys() == ["launches"])
        try ada.removeAll()
        #expect(try ada[.launches] == nil)
        #expect(try grace[.launches] == 2, "purging one user leaves the other")
        #expect(try store[.launches] == 99, "and the unscoped keys")
    }

    /// An account name with a `/` can't reach into another account's data: namespace `"a"` with
    /// key `"b/c"` and namespace `"a/b"` with key `"c"` are two keys.
    @Test(arguments: Backend.allCases)
    func aSlashInANamespaceDoesNotReachIntoAnother(backend: Backend) throws {
        let (store, owner) = try makeStore(backend)
        defer { withExtendedLifetime(owner) {} }
        let outer = store.scoped(to: "a"), inner = store.scoped(to: "a/b"), percent = store.scoped(to: "a%2Fb")
        try outer.setData(Data("outer".utf8), forKey: "b/c")
        try inner.setData(Data("inner".utf8), forKey: "c")
        try percent.setData(Data("percent".utf8), forKey: "c")
        #expect(try outer.data(forKey: "b/c") == Data("outer".utf8))
        #expect(try inner.data(forKey: "c") == Data("inner".utf8))
        #expect(try percent.data(forKey: "c") == Data("percent".utf8))
        #expect(try outer.keys() == ["b/c"])
        #expect(try inner.keys() == ["c"])
        try outer.removeAll()
        #expect(try inner.data(forKey: "c") == Data("inner".utf8), "purging one namespace leaves the other")
        #expect(try percent.data(forKey: "c") == Data("percent".utf8))
    }
}

@Suite struct InMemoryStoreTests {
    @Test func contentsShowEverything() throws {
        let store = InMemoryStore(["a": Data([1])])
        try store.setData(Data([2]), forKey: "b")
        #expect(store.contents == ["a": Data([1]), "b": Data([2])])
    }

    @Test func storeErrorsNameTheirSubject() {
        #expect(StoreError.corrupted(path: "/x/s.json", movedTo: "/x/s.json.corrupt-1", reason: "bad").description
            == "/x/s.json is corrupted (bad); the bad copy was kept at /x/s.json.corrupt-1")
        #expect(StoreError.unwritable(path: "/ro/s.json", reason: "Read-only file system").description
            == "cannot write /ro/s.json: Read-only file system")
        #expect(StoreError.missingDirectory(path: "/nope").description == "the directory /nope does not exist")
        #expect(StoreError.decodingFailed(key: "k", reason: "r").description.contains("'k'"))
    }
}
