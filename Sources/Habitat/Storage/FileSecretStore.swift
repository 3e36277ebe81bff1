public import Foundation

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
/// The directory is trusted only while nobody else can change it, as OpenSSH's `StrictModes`
/// asks of `~/.ssh`: every read and write first checks that it is not a symbolic link, is owned
/// by this user and is writable by nobody else, and throws
/// ``StoreError/untrustedDirectory(path:reason:)`` otherwise. Secret files are opened without
/// following symbolic links and must be regular files of at most ``maximumSecretSize`` bytes.
/// Writers in several processes take turns on a lock file (`.lock`) in the directory.
// Safe: every property is immutable, and `lock` serialises this process's file access.
public final class FileSecretStore: SecretStore, @unchecked Sendable {

    /// The directory that holds one file per secret.
    public let directory: URL
    /// The largest secret this store reads, in bytes (64 KiB).
    public let maximumSecretSize = 64 << 10
    private let directoryPath: String
    private let lockPath: String
    private let lock = Lock()

    /// Opens the secret directory, creating it owner-only when missing.
    ///
    /// Temporary files that killed writers left in the directory are removed here.
    /// - Parameter directory: Where the secret files live.
    /// - Throws: ``StoreError/unwritable(path:reason:)`` when the directory can't be created,
    ///   ``StoreError/untrustedDirectory(path:reason:)`` when someone else could change it.
    public init(directory: URL) throws(StoreError) {
        self.directory = directory.standardizedFileURL
        self.directoryPath = self.directory.path
        self.lockPath = self.directoryPath + "/.lock"
        try FileSystem.ensureDirectory(self.directory, create: true)
        if FileSystem.hasTemporaries(in: directoryPath) {
            let directoryPath = self.directoryPath
            _ = try? FileSystem.withLock(lockPath) { FileSystem.removeStaleTemporaries(in: directoryPath) }
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
        let path = path(forKey: key)
        return try lock.withLock { () throws(StoreError) in
            try FileSystem.checkTrusted(directory: directoryPath)
            return try FileSystem.read(path, limit: maximumSecretSize)
        }
    }

    public func setSecret(_ secret: Data?, forKey key: String) throws(StoreError) {
        let path = path(forKey: key)
        if let secret, secret.count > maximumSecretSize {
            throw .tooLarge(path: path, size: secret.count, limit: maximumSecretSize)
        }
        try lock.withLock { () throws(StoreError) in
            try FileSystem.checkTrusted(directory: directoryPath)
            try FileSystem.withLock(lockPath) { () throws(StoreError) in
                if let secret {
                    try FileSystem.writeAtomically(secret, to: path)
                } else {
                    try FileSystem.remove(path)
                }
            }
        }
    }
}
