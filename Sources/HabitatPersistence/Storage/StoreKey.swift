import Foundation
import Habitat

/// A key with its value's type, so an app never spells a key or a type twice.
///
/// Values are stored as JSON.
///
/// ```swift
/// extension StoreKey where Value == [String] {
///     static let recentSearches = StoreKey("recentSearches")
/// }
///
/// try store.set(["swift"], for: .recentSearches)
/// let recent = try store[.recentSearches] ?? []
/// try store.remove(.recentSearches)
/// ```
public struct StoreKey<Value: Codable & Sendable>: Sendable, Hashable, CustomStringConvertible {
    /// The key's name in the store.
    public let name: String

    /// Creates a typed key.
    /// - Parameter name: The key's name in the store.
    public init(_ name: String) { self.name = name }

    /// The key's name.
    public var description: String { name }
}

extension KeyValueStore {
    /// The value stored under `key`, or `nil` when there is none.
    ///
    /// NB: the subscript is read-only on purpose. A Swift subscript's setter can't throw, and a
    /// write that can fail on disk must be able to say so: write with `set(_:for:)`.
    ///
    /// - Throws: ``StoreError/decodingFailed(key:reason:)`` when the stored data is not a
    ///   `Value`, or the store's own read errors.
    public subscript<Value>(key: StoreKey<Value>) -> Value? {
        get throws(StoreError) { try value(for: key) }
    }

    /// The value stored under `key`, or `nil` when there is none.
    /// - Parameter key: The typed key to read.
    /// - Returns: The decoded value.
    /// - Throws: ``StoreError/decodingFailed(key:reason:)`` when the stored data is not a
    ///   `Value`, or the store's own read errors.
    public func value<Value>(for key: StoreKey<Value>) throws(StoreError) -> Value? {
        guard let data = try data(forKey: key.name) else { return nil }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw .decodingFailed(key: key.name, reason: describe(error))
        }
    }

    /// Stores `value` under `key`, or removes the key when `value` is `nil`.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The typed key to write.
    /// - Throws: ``StoreError/encodingFailed(key:reason:)``, or the store's write errors.
    public func set<Value>(_ value: Value?, for key: StoreKey<Value>) throws(StoreError) {
        guard let value else { return try removeValue(forKey: key.name) }
        let data: Data
        do {
            data = try JSONEncoder().encode(value)
        } catch {
            throw .encodingFailed(key: key.name, reason: describe(error))
        }
        try setData(data, forKey: key.name)
    }

    /// Removes the value under `key`, if any.
    /// - Parameter key: The typed key to remove.
    /// - Throws: The store's write errors.
    public func remove<Value>(_ key: StoreKey<Value>) throws(StoreError) {
        try removeValue(forKey: key.name)
    }
}

/// A short description of a coding error that never quotes the data being coded.
func describe(_ error: any Error) -> String {
    // NB: Foundation's own messages quote the stored text ("Cannot initialize AuthState from
    // invalid String value ..."), so they are never passed on; the key path and the kind of
    // failure are.
    func location(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        return path.isEmpty ? "" : " at '\(path)'"
    }
    switch error {
    case DecodingError.dataCorrupted(let context):
        return context.codingPath.isEmpty ? "not valid JSON, or not the expected shape" : "invalid value\(location(context))"
    case DecodingError.keyNotFound(let key, let context):
        return "missing key '\(key.stringValue)'\(location(context))"
    case DecodingError.typeMismatch(let type, let context):
        return "expected a value of type \(type)\(location(context))"
    case DecodingError.valueNotFound(let type, let context):
        return "expected a value of type \(type), found null\(location(context))"
    case EncodingError.invalidValue(_, let context):
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        return path.isEmpty ? "a value cannot be encoded" : "the value at '\(path)' cannot be encoded"
    default:
        return String(describing: type(of: error))
    }
}
