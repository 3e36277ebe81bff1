public import Foundation
import Habitat
public import HabitatPersistence

/// A `KeyValueStore` for tests that records every operation in order and can be told to fail.
///
/// ```swift
/// let store = MockKeyValueStore()
/// store.failNext(1, with: .unwritable(path: "mock", reason: "disk full"))
/// #expect(throws: StoreError.self) { try sessions.save(env) }
/// #expect(store.operations == [.write(["habitat.session": .written])])
/// ```
public final class MockKeyValueStore: KeyValueStore, Sendable {
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
            case .write(let changes):
                "write " + changes.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value))" }.joined(separator: ", ")
            case .listKeys: "keys"
            }
        }
    }

    /// What a write did to one key. Values are not recorded, so a mock's log never holds secrets.
    public enum WriteKind: Sendable, Hashable, CustomStringConvertible {
        case written, removed
        public var description: String { self == .written ? "written" : "removed" }
    }

    private let recorder: MockRecorder<Operation>

    /// Creates a mock holding `values`.
    /// - Parameter values: The initial contents.
    public init(_ values: [String: Data] = [:]) {
        recorder = MockRecorder(values)
    }

    /// Every operation so far, in order, failed ones included.
    public var operations: [Operation] { recorder.operations }

    /// The current contents.
    public var contents: [String: Data] { recorder.contents }

    /// Makes the next `count` operations throw `error` (and change nothing).
    /// - Parameters:
    ///   - count: How many operations fail.
    ///   - error: The error they throw.
    public func failNext(_ count: Int = 1, with error: StoreError = .unavailable(key: "MockKeyValueStore", reason: "a failure injected by the test")) {
        recorder.failNext(count, with: error)
    }

    /// Makes the next `count` writes throw `error` (and change nothing); reads and listings go
    /// through meanwhile.
    /// - Parameters:
    ///   - count: How many writes fail.
    ///   - error: The error they throw.
    public func failNextWrites(_ count: Int = 1, with error: StoreError = .unavailable(key: "MockKeyValueStore", reason: "a failure injected by the test")) {
        recorder.failNext(count, with: error, writesOnly: true)
    }

    /// Forgets the recorded operations.
    public func clearOperations() {
        recorder.clearOperations()
    }

    public func data(forKey key: String) throws(StoreError) -> Data? {
        try recorder.perform(.read(key), key: key) { $0[key] }
    }

    public func write(_ changes: [String: Data?]) throws(StoreError) {
        let kinds = changes.mapValues { $0 == nil ? WriteKind.removed : .written }
        try recorder.perform(.write(kinds), key: changes.keys.sorted().joined(separator: ", "), writing: true) { values in
            for (key, data) in changes { values[key] = data }
        }
    }

    public func keys() throws(StoreError) -> [String] {
        try recorder.perform(.listKeys, key: "") { Array($0.keys) }
    }
}

/// A `SecretStore` for tests that records every operation in order and can be told to fail.
///
/// The log records which keys were read, written or deleted, never the secrets.
public final class MockSecretStore: SecretStore, Sendable {
    /// One call made to the store.
    public enum Operation: Sendable, Hashable {
        /// `secret(forKey:)`.
        case read(String)
        /// `setSecret(_:forKey:)` with a secret.
        case write(String)
        /// `setSecret(nil, forKey:)`.
        case delete(String)
    }

    private let recorder = MockRecorder<Operation>([:])

    /// Creates an empty mock.
    public init() {}

    /// Every operation so far, in order, failed ones included.
    public var operations: [Operation] { recorder.operations }

    /// The names of the secrets held now.
    public var keys: Set<String> { Set(recorder.contents.keys) }

    /// Whether any held secret is or contains `secret`.
    ///
    /// A `SessionStore` keeps the token inside a small record that pairs it with its snapshot,
    /// so this looks for the bytes anywhere in each held value.
    /// - Parameter secret: The secret to look for.
    /// - Returns: `true` when some key holds these bytes.
    public func contains(_ secret: String) -> Bool {
        let bytes = Data(secret.utf8)
        return recorder.contents.values.contains { $0.range(of: bytes) != nil }
    }

    /// Makes the next `count` operations throw `error` (and change nothing).
    public func failNext(_ count: Int = 1, with error: StoreError = .unavailable(key: "MockSecretStore", reason: "a failure injected by the test")) {
        recorder.failNext(count, with: error)
    }

    /// Makes the next `count` writes and deletes throw `error` (and change nothing); reads go
    /// through meanwhile: a Keychain that refuses to save, while the session can still be read.
    /// - Parameters:
    ///   - count: How many writes fail.
    ///   - error: The error they throw.
    public func failNextWrites(_ count: Int = 1, with error: StoreError = .unavailable(key: "MockSecretStore", reason: "a failure injected by the test")) {
        recorder.failNext(count, with: error, writesOnly: true)
    }

    /// Makes every operation throw `StoreError.unavailable(key:reason:)` (and change
    /// nothing) until it is called with `false`: a Keychain while the device is locked.
    /// - Parameters:
    ///   - unavailable: Whether the store is unavailable from now on.
    ///   - reason: The reason the errors give.
    public func setUnavailable(_ unavailable: Bool, reason: String = "the device is locked") {
        recorder.setUnavailable(unavailable ? reason : nil)
    }

    public func secret(forKey key: String) throws(StoreError) -> Data? {
        try recorder.perform(.read(key), key: key) { $0[key] }
    }

    public func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        try recorder.perform(secret == nil ? .delete(key) : .write(key), key: key, writing: true) { $0[key] = secret }
    }
}

/// What both mocks share: their contents, the log of operations, and the queue of injected
/// failures, all behind one lock.
final class MockRecorder<Operation: Sendable>: Sendable {
    private struct State {
        var values: [String: Data]
        var log: [Operation] = []
        var failures: [StoreError] = []
        var writeFailures: [StoreError] = []
        var unavailableReason: String?
    }

    private let state: LockedBox<State>

    init(_ values: [String: Data]) {
        state = LockedBox(State(values: values))
    }

    var operations: [Operation] { state.withLock { $0.log } }
    var contents: [String: Data] { state.withLock { $0.values } }

    func failNext(_ count: Int, with error: StoreError, writesOnly: Bool = false) {
        state.withLock { state in
            if writesOnly {
                state.writeFailures.append(contentsOf: Array(repeating: error, count: count))
            } else {
                state.failures.append(contentsOf: Array(repeating: error, count: count))
            }
        }
    }

    func clearOperations() {
        state.withLock { $0.log.removeAll() }
    }

    func setUnavailable(_ reason: String?) {
        state.withLock { $0.unavailableReason = reason }
    }

    /// Logs `operation`, then throws the next injected failure (of a write, for one that is
    /// `writing`), or `.unavailable` about `key` while the store is unavailable, or runs `body`
    /// on the contents.
    func perform<R>(_ operation: Operation, key: String, writing: Bool = false, _ body: (inout [String: Data]) -> R) throws(StoreError) -> R {
        try state.withLock { (state) throws(StoreError) -> R in
            state.log.append(operation)
            if !state.failures.isEmpty { throw state.failures.removeFirst() }
            if writing, !state.writeFailures.isEmpty { throw state.writeFailures.removeFirst() }
            if let reason = state.unavailableReason { throw .unavailable(key: key, reason: reason) }
            return body(&state.values)
        }
    }
}

extension MockSecretStore: CustomReflectable {
    /// The names of the secrets held and the operations so far, never the secrets, so `dump`
    /// and reflection-based printers stay safe.
    public var customMirror: Mirror {
        Mirror(self, children: ["keys": keys.sorted(), "operations": operations], displayStyle: .class)
    }
}
