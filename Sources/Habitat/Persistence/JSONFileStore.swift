public import Foundation

/// A ``KeyValueStore`` kept in one JSON document on disk, safe against crashes and against
/// other processes writing the same file.
///
/// ```swift
/// let store = try JSONFileStore(url: appSupport.appendingPathComponent("settings.json"))
/// try store.set(RemoteConfig.default, for: .config)
/// ```
///
/// - **Atomic writes.** Every write goes to a temporary file in the same directory, which is
///   flushed to disk, renamed over the old file, and the directory flushed too. A process
///   killed at any instant leaves the old document or the new one, complete.
/// - **Several writers.** Each read-modify-write holds an advisory lock (`flock`) on a
///   `name.lock` file beside the document, so two processes, or two stores on one file, never
///   lose each other's keys.
/// - **Owner-only.** Files and directories the store creates are `0600` and `0700`.
/// - **Corruption.** A file that is not valid JSON, or not this store's format, is moved aside
///   to `name.corrupt-<milliseconds>` and the operation throws ``StoreError/corrupted(path:movedTo:reason:)``,
///   naming both paths. Nothing is overwritten: the store then starts empty, and the caller
///   decides whether to carry on or stop.
/// - **Failures.** A read-only directory, a full disk or a missing directory throws a
///   ``StoreError`` naming the path, and the document on disk stays the last good one.
///
/// Values that are UTF-8 text (JSON, as ``StoreKey`` writes) are stored as readable strings
/// under `"entries"`; other bytes as Base64 under `"binary"`. The document is small-data storage: each write rewrites the whole file.
public final class JSONFileStore: KeyValueStore, @unchecked Sendable {
    // Safe: every property is immutable; file access is serialised by `flock` across processes
    // and by `lock` within this one.

    /// The document's location.
    public let url: URL
    private let lockPath: String
    private let lock = Lock()

    /// The format tag and version written into every document.
    static let format = "habitat.kv"
    static let formatVersion = 1

    /// Opens (or prepares to create) the store at `url`.
    ///
    /// The file itself is created on the first write.
    /// - Parameters:
    ///   - url: The JSON file.
    ///   - createDirectory: Whether to create the file's directory (owner-only) when it is
    ///     missing; `true` by default.
    /// - Throws: ``StoreError/missingDirectory(path:)`` when the directory is missing and may not
    ///   be created, ``StoreError/unwritable(path:reason:)`` when it can't be created.
    public init(url: URL, createDirectory: Bool = true) throws(StoreError) {
        self.url = url.standardizedFileURL
        self.lockPath = self.url.path + ".lock"
        try FileSystem.ensureDirectory(self.url.deletingLastPathComponent(), create: createDirectory)
    }

    public func data(forKey key: String) throws(StoreError) -> Data? {
        try readDocument()[key]
    }

    public func keys() throws(StoreError) -> [String] {
        Array(try readDocument().keys)
    }

    public func write(_ changes: [String: Data?]) throws(StoreError) {
        try lock.withLock { () throws(StoreError) in
            try FileSystem.withLock(lockPath, exclusive: true) { () throws(StoreError) in
                var entries = try load()
                for (key, data) in changes { entries[key] = data }
                try FileSystem.writeAtomically(try Self.encode(entries), to: url.path)
            }
        }
    }

    /// Every key and value in the document.
    /// - Throws: ``StoreError`` when the file can't be read or is corrupted.
    public func readDocument() throws(StoreError) -> [String: Data] {
        try lock.withLock { () throws(StoreError) in
            try FileSystem.withLock(lockPath, exclusive: false) { () throws(StoreError) in try load() }
        }
    }

    /// Reads and decodes the document. Call with the file lock held.
    private func load() throws(StoreError) -> [String: Data] {
        guard let data = try FileSystem.read(url.path) else { return [:] }
        switch Self.decode(data) {
        case .success(let entries):
            return entries
        case .failure(.newerFormat(let version)):
            throw .unreadable(
                path: url.path,
                reason: "written in store format \(version), newer than this version of Habitat (\(Self.formatVersion))"
            )
        case .failure(.invalid(let reason)):
            let movedTo = try FileSystem.moveAside(url.path)
            throw .corrupted(path: url.path, movedTo: movedTo, reason: reason)
        }
    }

    // MARK: The document

    /// `{"format": "habitat.kv", "version": 1, "entries": {key: text}, "binary": {key: base64}}`
    ///
    /// NB: two flat maps of strings rather than one map of `{"utf8": ...}` objects: with
    /// Foundation's coders on Linux, flat maps decode and encode about twice as fast, and
    /// every write does both.
    struct Document: Codable {
        var format: String
        var version: Int
        var entries: [String: String]
        var binary: [String: String]?
    }

    enum DecodeFailure: Error {
        case invalid(String)
        case newerFormat(Int)
    }

    static func encode(_ entries: [String: Data]) throws(StoreError) -> Data {
        var document = Document(format: format, version: formatVersion, entries: [:], binary: nil)
        for (key, data) in entries {
            if let text = String(data: data, encoding: .utf8) {
                document.entries[key] = text
            } else {
                document.binary = document.binary ?? [:]
                document.binary?[key] = data.base64EncodedString()
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
        do {
            return try encoder.encode(document)
        } catch {
            throw .encodingFailed(key: "(document)", reason: describe(error))
        }
    }

    static func decode(_ data: Data) -> Result<[String: Data], DecodeFailure> {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch {
            return .failure(.invalid("not a Habitat store document: \(describe(error))"))
        }
        guard document.format == format else {
            return .failure(.invalid("unknown format '\(document.format.prefix(40))'"))
        }
        guard document.version <= formatVersion else { return .failure(.newerFormat(document.version)) }
        guard document.version >= 1 else { return .failure(.invalid("invalid format version \(document.version)")) }
        var entries: [String: Data] = [:]
        entries.reserveCapacity(document.entries.count)
        for (key, text) in document.entries {
            entries[key] = Data(text.utf8)
        }
        for (key, encoded) in document.binary ?? [:] {
            guard entries[key] == nil else {
                return .failure(.invalid("key '\(key.prefix(80))' is both text and binary"))
            }
            guard let data = Data(base64Encoded: encoded) else {
                return .failure(.invalid("the value of key '\(key.prefix(80))' is not valid Base64"))
            }
            entries[key] = data
        }
        return .success(entries)
    }
}
