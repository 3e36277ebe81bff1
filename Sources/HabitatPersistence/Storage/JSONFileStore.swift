public import Foundation
import Habitat

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
///   lose each other's keys. Reads need no lock: they see one whole document or the other.
/// - **Owner-only.** Files and directories the store creates are `0600` and `0700`.
/// - **Corruption.** A file that is not valid JSON, or not this store's format, is moved aside
///   to `name.corrupt-<milliseconds>` and the operation throws ``StoreError/corrupted(path:movedTo:reason:)``,
///   naming both paths. Nothing is overwritten: the store then starts empty, and the caller
///   decides whether to carry on or stop. The newest three set-aside copies are kept, older
///   ones removed: a damaged file may still hold an old token.
/// - **Failures.** A read-only directory, a full disk or a missing directory throws a
///   ``StoreError`` naming the path, and the document on disk stays the last good one.
/// - **No trust in the file system.** The store's directory must be the user's own and
///   writable by nobody else, and not a symbolic link, under ancestors owned by root or the
///   user that nobody else can write (sticky ones such as `/tmp` aside)
///   (``StoreError/untrustedDirectory(path:reason:)``). It is opened once, and every file is
///   reached through it, never by its path again.
///   The document and its lock file are opened without following symbolic links and must be
///   regular files (``StoreError/notARegularFile(path:found:)``) no larger than
///   `maximumFileSize` (``StoreError/tooLarge(path:size:limit:)``). Temporary files left by
///   writers that were killed are removed when the store opens and at the next write.
/// - **Every write reads back.** A write that would produce a document a read refuses (a value
///   nested too deep, a document over the size limit) throws instead, and nothing changes.
///
/// A value that is one JSON value (as ``StoreKey`` writes) is stored as itself under
/// `"values"`, so the file reads like the data it holds; other UTF-8 text as a string under
/// `"text"`, and any other bytes as Base64 under `"binary"`. Every value reads back byte for
/// byte.
///
/// The document is small-data storage: each write rewrites the whole file, so writing `n` keys
/// one at a time costs `n` rewrites of a growing document. Write them together with one
/// `write(_:)`: one rewrite, one lock, all of them or none.
// NB: file access is serialised by `flock` across processes and by `lock` within this one.
public final class JSONFileStore: KeyValueStore {

    /// The document's location.
    public let url: URL
    /// `url.path`, computed once: building it from the URL allocates on every call.
    private let path: String
    /// The file's name in `directory`, and its lock file's.
    private let name: String
    private let lockName: String
    /// The file's directory, opened once and checked: every file is reached through it.
    private let directory: StoreDirectory
    private let lock = LockedBox(())
    /// Told after each write: on Apple platforms another process of the device that follows this
    /// file (an app and its extension sharing a container) hears it even where its directory
    /// watch doesn't. (Elsewhere nobody listens: inotify hears every process.)
    private let signal: ChangeSignal
    /// The largest document this store reads or writes, in bytes.
    public let maximumFileSize: Int

    /// The default for `maximumFileSize`: 16 MiB, far above what small-data storage needs and
    /// far below what would hurt a phone's memory.
    public static let defaultMaximumFileSize = 16 << 20

    /// The format tag and version written into every document.
    static let format = "habitat.kv"
    static let formatVersion = 1

    /// Opens (or prepares to create) the store at `url`.
    ///
    /// The file itself is created on the first write.
    /// Temporary files that killed writers left beside the document are removed here.
    ///
    /// - Parameters:
    ///   - url: The JSON file.
    ///   - createDirectory: Whether to create the file's directory (owner-only) when it is
    ///     missing; `true` by default.
    ///   - maximumFileSize: The largest document to read or write, in bytes; 16 MiB by default.
    /// - Throws: ``StoreError/missingDirectory(path:)`` when the directory is missing and may not
    ///   be created, ``StoreError/unwritable(path:reason:)`` when it can't be created,
    ///   ``StoreError/untrustedDirectory(path:reason:)`` when someone else could change it,
    ///   ``StoreError/notARegularFile(path:found:)`` when `url` names a directory: the store is a
    ///   file, such as `session.json` in a directory.
    public init(url: URL, createDirectory: Bool = true, maximumFileSize: Int = defaultMaximumFileSize) throws(StoreError) {
        self.url = url.standardizedFileURL
        self.path = self.url.path
        self.name = self.url.lastPathComponent
        self.lockName = name + ".lock"
        self.signal = ChangeSignal(store: self.url.path)
        self.maximumFileSize = maximumFileSize
        try FileSystem.checkNotADirectory(path)
        self.directory = try StoreDirectory(self.url.deletingLastPathComponent().path, create: createDirectory, forSecrets: false)
        if let directory = directory.ifOpen, FileSystem.hasTemporaries(in: directory) {
            // Under the writers' lock, so no live writer's file is taken for a dead one's. A
            // store that can't take the lock (a read-only directory) leaves them to a writer.
            let name = self.name
            _ = try? FileSystem.withLock(lockName, in: directory) { FileSystem.removeStaleTemporaries(for: name, in: directory) }
        }
    }

    /// Calls `onChange` when the file may have changed, by this process or another: the kernel
    /// tells (inotify on Linux, a directory source on Apple platforms), so an idle observation
    /// wakes nobody. It watches the file's directory, so it goes on through the atomic
    /// replacement every write is, and through the file's deletion and re-creation. On Apple
    /// platforms every write also posts a Darwin notification named after the file, which this
    /// observation hears too: an app and its extension sharing a container wake each other.
    ///
    /// When the kernel refuses the watch (Linux's watch limit reached, `ENOSPC`; too many open
    /// files), it returns `nil`, so followers poll, and says so once per process on standard
    /// error.
    /// - Parameter onChange: Called after a change, on a utility queue.
    /// - Returns: The observation, or `nil` when the kernel refused the watch.
    public func observeChanges(_ onChange: @escaping @Sendable () -> Void) -> StoreObservation? {
        // NB: a directory a test's scope left for the first write can't be watched yet: poll.
        guard let directory = directory.ifOpen else { return nil }
        switch DirectoryWatch.start(name, in: directory, onChange: onChange) {
        case .success(let watch):
            #if canImport(Darwin)
            let signalled = signal.observe(onChange)
            return StoreObservation {
                watch.cancel()
                signalled?.stop()
            }
            #else
            return StoreObservation { watch.cancel() }
            #endif
        case .failure(let refused):
            if Self.refusalReported.withLock({ reported in defer { reported = true }; return !reported }) {
                FileHandle.standardError.write(Data(
                    "[Habitat] can't watch \(directory.path) for changes (\(refused.reason)): followers of it poll instead\n".utf8
                ))
            }
            return nil
        }
    }

    /// Whether a refused watch was reported, so it is reported once.
    private static let refusalReported = LockedBox(false)

    public func data(forKey key: String) throws(StoreError) -> Data? {
        try readDocument()[key]
    }

    public func keys() throws(StoreError) -> [String] {
        Array(try readDocument().keys)
    }

    public func write(_ changes: [String: Data?]) throws(StoreError) {
        for case (let key, let data?) in changes where JSONScanner.classify(data, at: Self.valueDepth) == .tooDeep {
            throw .valueTooDeep(key: key, limit: JSONScanner.maximumDepth - Self.valueDepth)
        }
        try lock.withLock { () throws(StoreError) in
            let directory = try directory.forWriting()
            try directory.check()
            try FileSystem.withLock(lockName, in: directory) { () throws(StoreError) in
                var entries = try load(in: directory)
                for (key, data) in changes { entries[key] = data }
                let document = try Self.encode(entries)
                guard document.count <= maximumFileSize else {
                    throw .tooLarge(path: path, size: document.count, limit: maximumFileSize)
                }
                try FileSystem.writeAtomically(document, to: name, in: directory)
            }
        }
        signal.post()
    }

    /// Every key and value in the document; apps read keys with `data(forKey:)`.
    /// - Throws: ``StoreError`` when the file can't be read or is corrupted.
    func readDocument() throws(StoreError) -> [String: Data] {
        // NB: a read takes no file lock. Writers replace the file by `rename`, so a reader sees
        // the old document or the new one, whole. Only a document that fails to decode is read
        // again under the writers' lock before it is judged corrupt and moved aside: it may have
        // been the old file, replaced by a good one a moment ago.
        guard let directory = try directory.forReading(),
              let data = try FileSystem.read(name, in: directory, limit: maximumFileSize)
        else { return [:] }
        if case .success(let entries) = Self.decode(data) { return entries }
        return try lock.withLock { () throws(StoreError) in
            try FileSystem.withLock(lockName, in: directory) { () throws(StoreError) in try load(in: directory) }
        }
    }

    /// Reads and decodes the document, moving a corrupt one aside. Call with the file lock held
    /// exclusively.
    private func load(in directory: TrustedDirectory) throws(StoreError) -> [String: Data] {
        guard let data = try FileSystem.read(name, in: directory, limit: maximumFileSize) else { return [:] }
        switch Self.decode(data) {
        case .success(let entries):
            return entries
        case .failure(.newerFormat(let version)):
            throw .unreadable(
                path: path,
                reason: "written in store format \(version), newer than this version of Habitat (\(Self.formatVersion))"
            )
        case .failure(.invalid(let reason)):
            let movedTo = try FileSystem.moveAside(name, in: directory)
            throw .corrupted(path: path, movedTo: movedTo, reason: reason)
        }
    }

    // MARK: The document

    /// ```
    /// {
    ///   "format" : "habitat.kv",
    ///   "version" : 1,
    ///   "values" : { "key" : <the value itself, when it is one JSON value> },
    ///   "text" : { "key" : "<other UTF-8 text, as a string>" },
    ///   "binary" : { "key" : "<anything else, as Base64>" }
    /// }
    /// ```
    ///
    /// NB: a JSON value (what ``StoreKey`` writes) is kept as itself, not as a string holding
    /// JSON: the file stays readable, and a read hands back the value's exact bytes for the
    /// caller to decode once. A string of escaped JSON would be decoded twice; restoring a
    /// session measured twice as slow that way.
    enum DecodeFailure: Error {
        case invalid(String)
        case newerFormat(Int)
    }

    /// How deep a value sits in the document: the document's object, then `"values"`.
    static let valueDepth = 2

    static func encode(_ entries: [String: Data]) throws(StoreError) -> Data {
        var values: [(String, [UInt8])] = []
        var text: [(String, String)] = []
        var binary: [(String, String)] = []
        for (key, data) in entries.sorted(by: { $0.key < $1.key }) {
            if JSONScanner.classify(data, at: valueDepth) == .value {
                values.append((key, [UInt8](data)))
            } else if let string = String(data: data, encoding: .utf8) {
                text.append((key, string))
            } else {
                binary.append((key, data.base64EncodedString()))
            }
        }
        var output: [UInt8] = []
        output.append(contentsOf: "{\n  \"format\" : \"\(format)\",\n  \"version\" : \(formatVersion)".utf8)
        func section(_ name: String, _ members: [(String, [UInt8])]) {
            output.append(contentsOf: ",\n  \"\(name)\" : {".utf8)
            for (index, (key, value)) in members.enumerated() {
                output.append(contentsOf: (index == 0 ? "\n    " : ",\n    ").utf8)
                appendJSONString(key, to: &output)
                output.append(contentsOf: " : ".utf8)
                output.append(contentsOf: value)
            }
            output.append(contentsOf: (members.isEmpty ? "}" : "\n  }").utf8)
        }
        func quoted(_ string: String) -> [UInt8] {
            var bytes: [UInt8] = []
            appendJSONString(string, to: &bytes)
            return bytes
        }
        section("values", values)
        if !text.isEmpty { section("text", text.map { ($0.0, quoted($0.1)) }) }
        if !binary.isEmpty { section("binary", binary.map { ($0.0, quoted($0.1)) }) }
        output.append(contentsOf: "\n}\n".utf8)
        return Data(output)
    }

    static func decode(_ data: Data) -> Result<[String: Data], DecodeFailure> {
        JSONScanner.scan(data) { scanner in decode(&scanner) }
    }

    private static func decode(_ scanner: inout JSONScanner) -> Result<[String: Data], DecodeFailure> {
        var members: [String: Range<Int>] = [:]
        var repeated: String?
        do throws(JSONScanner.Failure) {
            try scanner.scanTopLevelObject { key, range, _ in
                if members.updateValue(range, forKey: key) != nil { repeated = repeated ?? key }
            }
        } catch {
            return .failure(.invalid("not valid JSON: \(error.reason)"))
        }
        // NB: a second "values" or "version" would be read last-wins, and which one a reader
        // takes is no document's meaning.
        if let repeated { return .failure(.invalid("the document's top-level key '\(repeated.prefix(80))' appears twice")) }
        do throws(JSONScanner.Failure) {
            guard let formatRange = members["format"], scanner.isString(formatRange),
                  try scanner.string(in: formatRange) == format
            else { return .failure(.invalid("not a Habitat store document: no \"format\" : \"\(format)\"")) }
            guard let versionRange = members["version"], let version = scanner.integer(in: versionRange) else {
                return .failure(.invalid("not a Habitat store document: no integer \"version\""))
            }
            guard version <= formatVersion else { return .failure(.newerFormat(version)) }
            guard version >= 1 else { return .failure(.invalid("invalid format version \(version)")) }
            guard let valuesRange = members["values"], scanner.isObject(valuesRange) else {
                return .failure(.invalid("not a Habitat store document: no \"values\" object"))
            }
            var entries: [String: Data] = [:]
            var duplicate: String?
            func add(_ key: String, _ value: Data) {
                if entries.updateValue(value, forKey: key) != nil { duplicate = key }
            }
            try scanner.scanObject(in: valuesRange) { key, range, scanner in
                add(key, scanner.data(in: range))
            }
            for (section, isBinary) in [("text", false), ("binary", true)] {
                guard let range = members[section] else { continue }
                guard scanner.isObject(range) else {
                    return .failure(.invalid("\"\(section)\" is not an object"))
                }
                var failure: String?
                try scanner.scanObject(in: range) { (key, valueRange, scanner) throws(JSONScanner.Failure) in
                    guard scanner.isString(valueRange) else {
                        failure = "the \(section) value of key '\(key.prefix(80))' is not a string"
                        return
                    }
                    let string = try scanner.string(in: valueRange)
                    if isBinary {
                        guard let bytes = Data(base64Encoded: string) else {
                            failure = "the value of key '\(key.prefix(80))' is not valid Base64"
                            return
                        }
                        add(key, bytes)
                    } else {
                        add(key, Data(string.utf8))
                    }
                }
                if let failure { return .failure(.invalid(failure)) }
            }
            if let duplicate { return .failure(.invalid("key '\(duplicate.prefix(80))' appears twice")) }
            return .success(entries)
        } catch {
            return .failure(.invalid(error.reason))
        }
    }
}
