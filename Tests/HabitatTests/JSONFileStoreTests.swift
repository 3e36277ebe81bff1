import Foundation
import Habitat
import HabitatPersistence
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct JSONFileStoreTests {
    @Test func writesAReadableOwnerOnlyDocument() throws {
        let directory = try TemporaryDirectory()
        let nested = directory.url.appendingPathComponent("a/b")
        let store = try JSONFileStore(url: nested.appendingPathComponent("store.json"))
        try store.set(7, for: .launches)
        #expect(try permissions(nested.path) == 0o700)
        #expect(try permissions(nested.appendingPathComponent("store.json").path) == 0o600)
        let text = try String(contentsOf: nested.appendingPathComponent("store.json"), encoding: .utf8)
        #expect(text.contains("\"format\" : \"habitat.kv\""))
        #expect(text.contains("\"launches\""))
        // A second store on the same file sees the value: it lives on disk, not in memory.
        #expect(try JSONFileStore(url: nested.appendingPathComponent("store.json"))[.launches] == 7)
    }

    /// A damaged file may still hold an old token: the newest three set-aside copies are kept,
    /// older ones removed, whatever the order the copies were made in.
    @Test func onlyTheNewestThreeSetAsideCopiesAreKept() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("store.json")
        let store = try JSONFileStore(url: file)
        var movedTo: [String] = []
        for round in 1...5 {
            try Data("damaged \(round) token-old".utf8).write(to: file)
            let result = Result { () throws(StoreError) in try store.keys() }
            guard case .failure(.corrupted(_, let aside, _)) = result else {
                Issue.record("expected .corrupted, got \(result)")
                return
            }
            movedTo.append(aside)
        }
        let copies = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("store.json.corrupt-") }
        #expect(Set(copies) == Set(movedTo.suffix(3).map { URL(fileURLWithPath: $0).lastPathComponent }))
        #expect(try Data(contentsOf: URL(fileURLWithPath: movedTo[4])) == Data("damaged 5 token-old".utf8))
    }

    @Test(arguments: [
        ("not JSON", "{ this is not json"),
        ("truncated", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{\"a\":{\"x\":1"),
        ("another format", "{\"format\":\"something-else\",\"version\":1,\"values\":{}}"),
        ("wrong types", "{\"format\":\"habitat.kv\",\"version\":\"one\",\"values\":{}}"),
        ("bad base64", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{},\"binary\":{\"a\":\"%%%\"}}"),
        ("value and binary", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{\"a\":1},\"binary\":{\"a\":\"AA==\"}}"),
        ("text not a string", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{},\"text\":{\"a\":7}}"),
        ("text not an object", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{},\"text\":[\"a\"]}"),
        ("bad escape in text", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{},\"text\":{\"a\":\"\\q\"}}"),
        ("no values", "{\"format\":\"habitat.kv\",\"version\":1}"),
        ("trailing garbage", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{}} x"),
        ("bad escape", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{\"a\\q\":1}}"),
        ("lone surrogate", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{\"\\ud800\":1}}"),
        ("bad number", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{\"a\":01}}"),
        ("an array", "[1,2,3]"),
        ("values twice", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{\"a\":1},\"values\":{\"a\":2}}"),
        ("version twice", "{\"format\":\"habitat.kv\",\"version\":1,\"values\":{},\"version\":9}"),
        ("format twice", "{\"format\":\"other\",\"format\":\"habitat.kv\",\"version\":1,\"values\":{}}"),
        ("empty file", ""),
    ])
    func aCorruptFileIsMovedAsideAndNamed(_ name: String, contents: String) throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("store.json")
        try Data(contents.utf8).write(to: file)
        let store = try JSONFileStore(url: file)

        var caught: StoreError?
        do { _ = try store.data(forKey: "a") } catch { caught = error }
        guard case .corrupted(let path, let movedTo, _) = caught else {
            Issue.record("expected .corrupted, got \(String(describing: caught))")
            return
        }
        #expect(path == file.path)
        #expect(movedTo.hasPrefix(file.path + ".corrupt-"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: movedTo)) == Data(contents.utf8), "the bad copy is kept as it was")
        #expect(caught?.description.contains(movedTo) == true)

        // The caller may carry on: the store starts empty, and never overwrites the bad copy.
        #expect(try store.keys().isEmpty)
        try store.set(1, for: .launches)
        #expect(try store[.launches] == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: movedTo)) == Data(contents.utf8))
    }

    @Test func aNewerFormatIsRefusedAndLeftUntouched() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("store.json")
        let newer = Data("{\"format\":\"habitat.kv\",\"version\":2,\"values\":{}}".utf8)
        try newer.write(to: file)
        let store = try JSONFileStore(url: file)
        #expect {
            try store.set(1, for: .launches)
        } throws: { error in
            guard case .unreadable(let path, let reason) = error as? StoreError else { return false }
            return path == file.path && reason.contains("format 2")
        }
        #expect(try Data(contentsOf: file) == newer)
        #expect(try directory.allFiles().count == 1 + 1, "only the file and its lock; nothing moved aside")
    }

    @Test func aMissingDirectoryIsATypedError() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.url.appendingPathComponent("nope")
        #expect(throws: StoreError.missingDirectory(path: missing.path)) {
            try JSONFileStore(url: missing.appendingPathComponent("store.json"), createDirectory: false)
        }
    }

    @Test func aDirectoryThatIsAFileIsATypedError() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("plain")
        try Data("x".utf8).write(to: file)
        #expect {
            try JSONFileStore(url: file.appendingPathComponent("store.json"))
        } throws: { error in
            guard case .unwritable(let path, _) = error as? StoreError else { return false }
            return path == file.path
        }
    }

    @Test func aReadOnlyDirectoryRefusesWritesAndKeepsTheLastGoodState() throws {
        let directory = try TemporaryDirectory()
        let folder = directory.url.appendingPathComponent("ro")
        let file = folder.appendingPathComponent("store.json")
        let store = try JSONFileStore(url: file)
        try store.set(1, for: .launches)
        let before = try Data(contentsOf: file)

        try withReadOnlyDirectory(folder) { () throws in
            #expect {
                try store.set(2, for: .launches)
            } throws: { error in
                guard case .unwritable(let path, _) = error as? StoreError else { return false }
                return path.hasPrefix(folder.path)
            }
            #expect(try store[.launches] == 1, "reads still work and see the last good state")
        }
        #expect(try Data(contentsOf: file) == before)
        #expect(try store[.launches] == 1)
    }

    @Test func aStoreOnAFilesystemNobodyMayWriteFailsWithATypedError() throws {
        // /sys refuses new files even to root.
        let url = URL(fileURLWithPath: "/sys/habitat-\(UUID().uuidString).json")
        guard FileManager.default.fileExists(atPath: "/sys") else { return }
        let store = try JSONFileStore(url: url, createDirectory: false)
        #expect(try store.keys().isEmpty)
        #expect {
            try store.set(1, for: .launches)
        } throws: { error in
            guard case .unwritable(let path, _) = error as? StoreError else { return false }
            return path.hasPrefix("/sys/")
        }
    }

    @Test func twoStoresOnOneFileKeepEachOthersKeys() async throws {
        let directory = try TemporaryDirectory()
        let first = try JSONFileStore(url: directory.file("store.json"))
        let second = try JSONFileStore(url: directory.file("store.json"))
        await withTaskGroup(of: Void.self) { group in
            for (name, store) in [("a", first), ("b", second)] {
                group.addTask {
                    for index in 0..<50 { try? store.setData(Data("\(index)".utf8), forKey: "\(name)-\(index)") }
                }
            }
        }
        let keys = Set(try first.keys())
        #expect(keys.count == 100)
        #expect(keys.contains("a-49") && keys.contains("b-49"))
    }

    @Test func errorsNeverQuoteStoredValues() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("store.json")
        let secretish = "value-7c1e-should-not-leak"
        try Data("{\"format\":\"habitat.kv\",\"version\":1,\"values\":{},\"binary\":{\"a\":\"\(secretish)!\"}}".utf8).write(to: file)
        do {
            _ = try JSONFileStore(url: file).keys()
            Issue.record("expected an error")
        } catch {
            #expect(!error.description.contains(secretish))
        }
    }
}

@Suite struct FileSecretStoreTests {
    @Test func secretsAreOwnerOnlyFilesAndDeletionRemovesThem() throws {
        let directory = try TemporaryDirectory()
        let folder = directory.url.appendingPathComponent("secrets")
        let secrets = try FileSecretStore(directory: folder)
        try secrets.setSecret(Data("s3cr3t".utf8), forKey: "session/token")
        let file = secrets.fileURL(forKey: "session/token")
        #expect(file.deletingLastPathComponent().path == folder.path, "a key can't escape the directory")
        #expect(try permissions(folder.path) == 0o700)
        #expect(try permissions(file.path) == 0o600)
        #expect(try secrets.secret(forKey: "session/token") == Data("s3cr3t".utf8))
        try secrets.setSecret(nil, forKey: "session/token")
        #expect(try secrets.secret(forKey: "session/token") == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        try secrets.setSecret(nil, forKey: "never-set")  // deleting nothing is fine
    }

    @Test func aSecretOverTheLimitIsATypedErrorAndTheOldOneStays() throws {
        let directory = try TemporaryDirectory()
        let secrets = try FileSecretStore(directory: directory.url.appendingPathComponent("secrets"))
        try secrets.setSecret(Data("kept".utf8), forKey: "token")
        let tooLarge = Data(repeating: 7, count: secrets.maximumSecretSize + 1)
        #expect(throws: StoreError.tooLarge(path: secrets.fileURL(forKey: "token").path, size: tooLarge.count, limit: secrets.maximumSecretSize)) {
            try secrets.setSecret(tooLarge, forKey: "token")
        }
        #expect(try secrets.secret(forKey: "token") == Data("kept".utf8))
        try secrets.setSecret(Data(repeating: 7, count: secrets.maximumSecretSize), forKey: "token")   // the limit itself is fine
    }

    @Test func keysCannotWalkOutOfTheDirectory() throws {
        let directory = try TemporaryDirectory()
        let secrets = try FileSecretStore(directory: directory.url.appendingPathComponent("secrets"))
        for key in ["../escape", "..", ".", "a/../../b", ""] {
            #expect(secrets.fileURL(forKey: key).deletingLastPathComponent().standardizedFileURL.path
                == secrets.directory.path)
        }
    }

    @Test func aBatchWriteLandsWholeOrNotAtAll() throws {
        let directory = try TemporaryDirectory()
        let store = try JSONFileStore(url: directory.file("store.json"))
        let deep = Data((String(repeating: "[", count: 600) + String(repeating: "]", count: 600)).utf8)
        #expect(throws: StoreError.valueTooDeep(key: "deep", limit: 510)) {
            try store.write(["a": Data("1".utf8), "b": Data("2".utf8), "deep": deep])
        }
        #expect(try store.keys().isEmpty, "nothing of a refused batch was written")
        try store.write(["a": Data("1".utf8), "b": Data("2".utf8), "c": nil])
        let reopened = try JSONFileStore(url: directory.file("store.json"))
        #expect(try reopened.keys().sorted() == ["a", "b"])
        #expect(try reopened.data(forKey: "b") == Data("2".utf8))
    }

    @Test func anyKeyRoundTrips() throws {
        let directory = try TemporaryDirectory()
        let secrets = try FileSecretStore(directory: directory.url.appendingPathComponent("secrets"))
        let keys = ["", ".hidden", "é/日本", "a b", "%41", "A"]
        for (index, key) in keys.enumerated() { try secrets.setSecret(Data("\(index)".utf8), forKey: key) }
        for (index, key) in keys.enumerated() { #expect(try secrets.secret(forKey: key) == Data("\(index)".utf8), "\(key)") }
        let names = try FileManager.default.contentsOfDirectory(atPath: secrets.directory.path).filter { $0 != ".lock" }
        #expect(names.count == keys.count, "distinct keys, distinct files: \(names)")
        #expect(!names.contains { $0.hasPrefix(".") })
    }

    @Test func inMemorySecretsRoundTrip() throws {
        let secrets = InMemorySecretStore()
        try secrets.setSecret(Data("x".utf8), forKey: "k")
        #expect(secrets.keys == ["k"])
        try secrets.setSecret(nil, forKey: "k")
        #expect(try secrets.secret(forKey: "k") == nil)
    }
}

/// Makes `directory` read-only for the duration of `body`, even for root (via `chattr +i`),
/// and checks that it really is before running `body`.
func withReadOnlyDirectory(_ directory: URL, _ body: () throws -> Void) throws {
    chmod(directory.path, 0o500)
    var immutable = false
    if geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/chattr") {
        immutable = run("/usr/bin/chattr", ["+i", directory.path]) == 0
    }
    defer {
        if immutable { _ = run("/usr/bin/chattr", ["-i", directory.path]) }
        chmod(directory.path, 0o700)
    }
    let probe = directory.appendingPathComponent("probe")
    if FileManager.default.createFile(atPath: probe.path, contents: Data()) {
        try? FileManager.default.removeItem(at: probe)
        withKnownIssue("expected, not a failure: this machine can't make a directory read-only for this user") {
            Issue.record("the directory stayed writable")
        }
        return
    }
    try body()
}

@discardableResult
func run(_ executable: String, _ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    do {
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    } catch {
        return -1
    }
}

@Suite struct JSONFileStoreFormatTests {
    @Test(arguments: [
        #"{"a":[1,-2.5e-3,0,true,false,null],"b":{"c":"\u00e9\ud83d\ude00\n\"q\""}}"#,
        #""just a string""#, "42", "-0.0E+7", "null", "[]", "{}", #"["é", "日本"]"#,
        " {\"padded\": true} ", "not json at all", "{\"unterminated\": ", "",
        String(repeating: "[", count: 510) + String(repeating: "]", count: 510),
    ])
    func everyValueReadsBackByteForByte(_ text: String) throws {
        let directory = try TemporaryDirectory()
        let store = try JSONFileStore(url: directory.file("store.json"))
        try store.setData(Data(text.utf8), forKey: "k")
        #expect(try store.data(forKey: "k") == Data(text.utf8))
        #expect(try JSONFileStore(url: directory.file("store.json")).data(forKey: "k") == Data(text.utf8))
    }

    @Test func jsonValuesAreStoredAsThemselves() throws {
        let directory = try TemporaryDirectory()
        let store = try JSONFileStore(url: directory.file("store.json"))
        try store.set(TestConfig(timeout: 5, features: []), for: .config)
        try store.setData(Data("plain words".utf8), forKey: "note")
        try store.setData(Data([0xFF, 0xFE]), forKey: "blob")
        let text = try String(contentsOf: directory.file("store.json"), encoding: .utf8)
        #expect(text.contains(#""config" : {"#), "the value is JSON in the file, not a string of JSON")
        #expect(text.contains(#""text" : {"#) && text.contains(#""note" : "plain words""#))
        #expect(text.contains(#""binary" : {"#) && text.contains(#""blob" : "//4=""#))
    }

    @Test func keysWithAnyCharactersRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let store = try JSONFileStore(url: directory.file("store.json"))
        let keys = ["quote\"", "back\\slash", "new\nline", "tab\t", "\u{01}", "é/日本", ""]
        try store.write(Dictionary(uniqueKeysWithValues: keys.map { ($0, Data("1".utf8)) }))
        #expect(Set(try JSONFileStore(url: directory.file("store.json")).keys()) == Set(keys))
    }

    @Test func nestingDeeperThanTheLimitIsCorruptionNotACrash() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("store.json")
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        try Data(#"{"format":"habitat.kv","version":1,"values":{"a":\#(deep)}}"#.utf8).write(to: file)
        #expect {
            try JSONFileStore(url: file).keys()
        } throws: { error in
            guard case .corrupted(_, _, let reason) = error as? StoreError else { return false }
            return reason.contains("nested deeper")
        }
    }
}
