import Foundation
import Habitat

/// A store's directory: opened, and created when missing, by the store's initialiser; except in
/// a test's scope (HabitatTesting's trait), where a missing directory is left missing until the
/// store's first write.
///
/// A test of launch code builds the app's stores over the app's real paths, and its saves and
/// restores go to a store of the test's own (see `TestStorage`): creating the app's data
/// directory there would leave it behind on the developer's machine for nothing. Reads of a
/// directory that isn't there find nothing, as they would in an empty one.
// NB: once open, the directory is the same `TrustedDirectory` the store would have opened in its
// initialiser, checked the same way; only the moment differs.
final class StoreDirectory: Sendable {
    /// The directory's path, for messages.
    let path: String
    private let forSecrets: Bool
    /// The open directory; `nil` while a missing one waits for the store's first write.
    private let opened: LockedBox<TrustedDirectory?>

    /// Opens `path` (creating it when `create` allows), or, in a test's scope, leaves a missing
    /// one for the first write.
    /// - Throws: What `TrustedDirectory.open` throws.
    init(_ path: String, create: Bool, forSecrets: Bool) throws(StoreError) {
        self.path = URL(fileURLWithPath: path).standardizedFileURL.path
        self.forSecrets = forSecrets
        if create, TestStorageBinding.current != nil, !FileManager.default.fileExists(atPath: self.path) {
            opened = LockedBox(nil)
        } else {
            opened = LockedBox(try TrustedDirectory.open(path, create: create, forSecrets: forSecrets))
        }
    }

    /// The directory for a read: `nil` while it doesn't exist (nothing to read).
    func forReading() throws(StoreError) -> TrustedDirectory? {
        try opened.withLock { (opened: inout TrustedDirectory?) throws(StoreError) -> TrustedDirectory? in
            if let opened { return opened }
            do throws(StoreError) {
                opened = try TrustedDirectory.open(path, create: false, forSecrets: forSecrets)
                return opened
            } catch {
                guard case .missingDirectory = error else { throw error }
                return nil
            }
        }
    }

    /// The directory for a write, created (owner-only) when missing.
    func forWriting() throws(StoreError) -> TrustedDirectory {
        try opened.withLock { (opened: inout TrustedDirectory?) throws(StoreError) -> TrustedDirectory in
            if let opened { return opened }
            let directory = try TrustedDirectory.open(path, create: true, forSecrets: forSecrets)
            opened = directory
            return directory
        }
    }

    /// The directory if it is open already, without touching the file system: for a watch.
    var ifOpen: TrustedDirectory? { opened.withLock { $0 } }
}
