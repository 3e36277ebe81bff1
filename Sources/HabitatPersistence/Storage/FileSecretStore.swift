public import Foundation
import Habitat

/// A ``SecretStore`` that keeps each secret in its own owner-only file (`0600`) inside an
/// owner-only directory (`0700`), written atomically.
///
/// ```swift
/// let secrets = try FileSecretStore(directory: dataDirectory.appendingPathComponent("secrets"))
/// ```
///
/// Deleting a secret unlinks its file, and any temporary file a killed writer left for it.
/// Error messages name the file, never the secret.
///
/// The directory is trusted only while nobody else can read or change it, as OpenSSH's
/// `StrictModes` asks of `~/.ssh`: it is opened once, without following symbolic links, and must
/// be owned by this user and closed to everyone else (`0700`), under ancestors owned by root or
/// this user that nobody else can write (a sticky `/tmp` is fine); it throws
/// ``StoreError/untrustedDirectory(path:reason:)`` otherwise, naming the directory at fault.
/// Every secret file is then reached through that open directory, never by its path again, so
/// a directory swapped for a symbolic link afterwards changes nothing. Secret files are opened
/// without following symbolic links and must be regular files of at most `maximumSecretSize`
/// bytes. Writers in several processes take turns on a lock file (`.lock`) in the directory.
// NB: `lock` serialises this process's file access; `flock` on `.lock`, other processes'.
public final class FileSecretStore: SecretStore {

    /// The directory that holds one file per secret.
    public let directory: URL
    /// The largest secret this store reads, in bytes (64 KiB).
    public let maximumSecretSize = 64 << 10
    private let directoryPath: String
    /// The directory, opened once and checked: every file is reached through it.
    private let trusted: StoreDirectory
    private let lock = LockedBox(())

    /// Opens the secret directory, creating it owner-only when missing.
    ///
    /// In a test's scope (HabitatTesting's `.environment` trait) a missing directory is created
    /// by the first write instead: a test of launch code that builds the app's stores creates
    /// nothing in the app's real data directory.
    ///
    /// Temporary files that killed writers left in the directory are removed here.
    /// - Parameter directory: Where the secret files live.
    /// - Throws: ``StoreError/unwritable(path:reason:)`` when the directory can't be created,
    ///   ``StoreError/untrustedDirectory(path:reason:)`` when someone else could read or change
    ///   it or one of its ancestors.
    public init(directory: URL) throws(StoreError) {
        self.directory = directory.standardizedFileURL
        self.directoryPath = self.directory.path
        self.trusted = try StoreDirectory(directoryPath, create: true, forSecrets: true)
        if let trusted = trusted.ifOpen, FileSystem.hasTemporaries(in: trusted) {
            // Every writer of this directory writes under `.lock`: under it, every temporary
            // file is a dead writer's, whatever process id it names.
            _ = try? FileSystem.withLock(".lock", in: trusted) { FileSystem.removeStaleTemporaries(in: trusted) }
        }
    }

    /// The file that holds the secret named `key`.
    /// - Parameter key: The secret's name.
    /// - Returns: The file's URL; the name is `key` with anything but letters, digits, `.`, `-`
    ///   and `_` percent-encoded.
    package func fileURL(forKey key: String) -> URL {
        URL(fileURLWithPath: path(forKey: key))
    }

    /// The file's path: `key` made a file name (`FileSystem.fileName(for:)`).
    private func path(forKey key: String) -> String {
        directoryPath + "/" + FileSystem.fileName(for: key)
    }

    public func secret(forKey key: String) throws(StoreError) -> Data? {
        let name = FileSystem.fileName(for: key)
        return try lock.withLock { () throws(StoreError) in
            guard let trusted = try trusted.forReading() else { return nil }
            try trusted.check()
            return try FileSystem.read(name, in: trusted, limit: maximumSecretSize)
        }
    }

    public func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        try setSecret(secret, forKey: key, flushingDirectory: true)
    }

    /// `setSecret(_:forKey:)` without the directory's flush: a save's tidying writes (see
    /// `TidyingSecretStore`).
    package func setSecretTidying(_ secret: Data?, forKey key: String) throws(StoreError) {
        try setSecret(secret, forKey: key, flushingDirectory: false)
    }

    private func setSecret(_ secret: Data?, forKey key: String, flushingDirectory: Bool) throws(StoreError) {
        let name = FileSystem.fileName(for: key)
        if let secret, secret.count > maximumSecretSize {
            throw .tooLarge(path: path(forKey: key), size: secret.count, limit: maximumSecretSize)
        }
        try lock.withLock { () throws(StoreError) in
            // NB: removing a secret from a directory that isn't there is nothing to do.
            guard let trusted = try secret == nil ? trusted.forReading() : trusted.forWriting() else { return }
            try trusted.check()
            try FileSystem.withLock(".lock", in: trusted) { () throws(StoreError) in
                if let secret {
                    try FileSystem.writeAtomically(secret, to: name, in: trusted, flushingDirectory: flushingDirectory)
                } else {
                    try FileSystem.remove(name, in: trusted, flushingDirectory: flushingDirectory)
                }
            }
        }
    }
}
