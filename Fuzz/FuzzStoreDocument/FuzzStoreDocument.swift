// Feeds arbitrary bytes to the two readers of what is on disk: the JSON file store's document
// reader and the session snapshot decoder. Each input must give a value or a typed error, never
// a crash, a hang or unbounded memory; and a document that reads must write back to a document
// that reads the same (a write never produces what a read refuses).

import Foundation
import Habitat
import HabitatPersistence

struct FuzzUser: Codable, Sendable { var id: Int; var name: String }
struct FuzzConfig: Codable, Sendable { var timeout: Int; var flags: [String: String] }
enum FuzzApp: EnvironmentSchema {
    typealias Services = Int
    typealias User = FuzzUser
    typealias Config = FuzzConfig
}

let directory: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("habitat-fuzz-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return url
}()
let document = directory.appendingPathComponent("store.json")
let store = try! JSONFileStore(url: document)

/// Every entry of a store's document, read as an app reads them.
func readEntries(of store: JSONFileStore) throws(StoreError) -> [String: Data] {
    var entries: [String: Data] = [:]
    for key in try store.keys() { entries[key] = try store.data(forKey: key) }
    return entries
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    let input = Data(bytes: bytes, count: count)

    // The snapshot decoder, as a restore meets it.
    let sessions = SessionStore<FuzzApp>(store: InMemoryStore(["habitat.session": input]), secrets: InMemorySecretStore())
    _ = try? sessions.load()

    // The store's document reader, through a file as a launch meets it.
    guard (try? input.write(to: document)) != nil else { return 0 }
    do {
        let entries = try readEntries(of: store)
        try store.write(entries.mapValues { Optional($0) })
        let again = try readEntries(of: JSONFileStore(url: document))
        precondition(again == entries, "a document that reads must write back to the same entries")
    } catch .corrupted(_, let movedTo, _) {
        try? FileManager.default.removeItem(atPath: movedTo)
    } catch {
        // Any other typed error is a fine answer to bad bytes.
    }
    return 0
}
