public import Foundation
public import Habitat

/// A ``KeyValueStore`` for tests that records every operation in order and can be told to fail.
///
/// ```swift
/// let store = MockKeyValueStore()
/// store.failNext(1, with: .unwritable(path: "mock", reason: "disk full"))
/// #expect(throws: StoreError.self) { try sessions.save(env) }
/// #expect(store.operations == [.write(["habitat.session": .written])])
/// ```
// Safe: every stored property is read and written only with `lock` held.
public final class MockKeyValueStore: KeyValueStore, @unchecked Sendable {

    /// One call made to the store.
    public enum Operation: Sendable, Hashable, CustomStringConvertible {
        /// `data(forKey:)` for the key.
        case read(String)
        /// `write(_:)` with, for each key, whether it was written or removed.
        case write([String: WriteKind])
        /// `keys()`.
        case listKeys

        public var description: String {
            switch self {
            case .read(let key): "read \(key)"
            case .write(let changes): "write " + changes.keys.sorted().map { "\($0) (\(changes[$0]!))" }.joined(separator: ", ")
            case .listKeys: "keys"
            }
        }
    }

    /// What a write did to one key. Values are not recorded, so a mock's log never holds secrets.
    public enum WriteKind: Sendable, Hashable, CustomStringConvertible {
        case written, removed
        public var description: String { self == .written ? "written" : "removed" }
    }

    private let lock = NSLock()
    private var values: [String: Data]
    private var log: [Operation] = []
    private var failures: [StoreError] = []

    /// Creates a mock holding `values`.
    /// - Parameter values: The initial contents.
    public init(_ values: [String: Data] = [:]) {
        self.values = values
    }

    /// Every operation so far, in order, failed ones included.
    public var operations: [Operation] { lock.withLock { log } }

    /// The current contents.
    public var contents: [String: Data] { lock.withLock { values } }

    /// Makes the next `count` operations throw `error` (and change nothing).
    /// - Parameters:
    ///   - count: How many operations fail.
    ///   - error: The error they throw.
    public func failNext(_ count: Int = 1, with error: StoreError = .injected("MockKeyValueStore")) {
        lock.withLock { failures.append(contentsOf: Array(repeating: error, count: count)) }
    }

    /// Forgets the recorded operations.
    public func clearOperations() {
        lock.withLock { log.removeAll() }
    }

    public func data(forKey key: String) throws(StoreError) -> Data? {
        try perform(.read(key)) { values[key] }
    }

    public func write(_ changes: [String: Data?]) throws(StoreError) {
        let kinds = changes.mapValues { $0 == nil ? WriteKind.removed : .written }
        try perform(.write(kinds)) {
            for (key, data) in changes { values[key] = data }
        }
    }

    public func keys() throws(StoreError) -> [String] {
        try perform(.listKeys) { Array(values.keys) }
    }

    private func perform<R>(_ operation: Operation, _ body: () -> R) throws(StoreError) -> R {
        lock.lock()
        defer { lock.unlock() }
        log.append(operation)
        if !failures.isEmpty { throw failures.removeFirst() }
        return body()
    }
}

/// A ``SecretStore`` for tests that records every operation in order and can be told to fail.
///
/// The log records which keys were read, written or deleted, never the secrets.
// Safe: every stored property is read and written only with `lock` held.
public final class MockSecretStore: SecretStore, @unchecked Sendable {

    /// One call made to the store.
    public enum Operation: Sendable, Hashable {
        /// `secret(forKey:)`.
        case read(String)
        /// `setSecret(_:forKey:)` with a secret.
        case write(String)
        /// `setSecret(nil, forKey:)`.
        case delete(String)
    }

    private let lock = NSLock()
    private var secrets: [String: Data] = [:]
    private var log: [Operation] = []
    private var failures: [StoreError] = []

    /// Creates an empty mock.
    public init() {}

    /// Every operation so far, in order, failed ones included.
    public var operations: [Operation] { lock.withLock { log } }

    /// The names of the secrets held now.
    public var keys: Set<String> { lock.withLock { Set(secrets.keys) } }

    /// Whether any held secret equals `secret`.
    /// - Parameter secret: The secret to look for.
    /// - Returns: `true` when some key holds exactly these bytes.
    public func contains(_ secret: String) -> Bool {
        lock.withLock { secrets.values.contains(Data(secret.utf8)) }
    }

    /// Makes the next `count` operations throw `error` (and change nothing).
    public func failNext(_ count: Int = 1, with error: StoreError = .injected("MockSecretStore")) {
        lock.withLock { failures.append(contentsOf: Array(repeating: error, count: count)) }
    }

    public func secret(forKey key: String) throws(StoreError) -> Data? {
        try perform(.read(key)) { secrets[key] }
    }

    public func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        try perform(secret == nil ? .delete(key) : .write(key)) { secrets[key] = secret }
    }

    private func perform<R>(_ operation: Operation, _ body: () -> R) throws(StoreError) -> R {
        lock.lock()
        defer { lock.unlock() }
        log.append(operation)
        if !failures.isEmpty { throw failures.removeFirst() }
        return body()
    }
}
