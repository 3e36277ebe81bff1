import Habitat
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A store's directory, opened once and checked, so that every file the store touches is
/// reached through this descriptor (`openat`, `renameat`, `unlinkat`), never by a path that
/// another user could redirect between a check and a use.
///
/// The rules are OpenSSH's `StrictModes`, applied to the whole path:
/// - every ancestor is owned by root or by this user, and writable by nobody else unless it is
///   sticky (`/tmp`, where only an entry's owner can rename or remove it); as Debian's OpenSSH
///   allows, an ancestor writable by its group is fine when that group is this user's own and
///   has no other members: none listed, and no other account's primary group (the user-private
///   groups of a `umask 002` system);
/// - the directory itself is not a symbolic link, is owned by this user and is writable by
///   nobody else; a directory of secrets is not readable by anybody else either (`0700`).
///
/// Symbolic links among the ancestors (macOS's `/var`, `/tmp`) are resolved once, and the
/// resolved path is walked without following links: a link swapped in meanwhile fails the walk.
/// A directory renamed after it was opened stays the store's directory.
// Safe: `descriptor` is immutable and owned by this object; it is closed only in `deinit`.
final class TrustedDirectory: @unchecked Sendable {
    /// The directory's path, for messages.
    let path: String
    /// The open directory.
    let descriptor: Int32
    private let forSecrets: Bool

    private init(path: String, descriptor: Int32, forSecrets: Bool) {
        self.path = path
        self.descriptor = descriptor
        self.forSecrets = forSecrets
    }

    deinit {
        close(descriptor)
    }

    /// The path of `name` in this directory, for messages.
    func path(of name: String) -> String { path + "/" + name }

    /// Opens `path`, creating it and its missing ancestors owner-only when `create` allows.
    /// - Throws: ``StoreError/missingDirectory(path:)``, ``StoreError/untrustedDirectory(path:reason:)``
    ///   (naming the directory or ancestor at fault), ``StoreError/unwritable(path:reason:)``.
    static func open(_ path: String, create: Bool, forSecrets: Bool) throws(StoreError) -> TrustedDirectory {
        let target = URL(fileURLWithPath: path).standardizedFileURL.path
        var missing: [String] = []
        var existing = target
        var status = stat()
        while lstat(existing, &status) != 0 {
            guard errno == ENOENT, existing != "/" else { throw .unreadable(path: existing, reason: FileSystem.lastError()) }
            missing.insert((existing as NSString).lastPathComponent, at: 0)
            existing = (existing as NSString).deletingLastPathComponent
        }
        guard missing.isEmpty || create else { throw .missingDirectory(path: target) }
        // The target itself must not be a link: resolve its parent only.
        if missing.isEmpty {
            missing = [(existing as NSString).lastPathComponent]
            existing = (existing as NSString).deletingLastPathComponent
        }
        guard let resolved = realpath(existing, nil) else { throw .unreadable(path: existing, reason: FileSystem.lastError()) }
        let base = String(cString: resolved)
        free(resolved)

        var fd = try openChecked("/", at: AT_FDCWD, path: "/", isTarget: false, forSecrets: forSecrets)
        var walked = ""
        let names = base.split(separator: "/").map(String.init) + missing
        for (index, name) in names.enumerated() {
            walked += "/" + name
            let isTarget = index == names.count - 1
            let isMissing = index >= names.count - missing.count
            if isMissing, mkdirat(fd, name, 0o700) != 0, errno != EEXIST {
                let reason = FileSystem.lastError()
                close(fd)
                throw .unwritable(path: target, reason: "cannot create the directory \(walked): \(reason)")
            }
            do {
                let next = try openChecked(name, at: fd, path: isTarget ? target : walked, isTarget: isTarget, forSecrets: forSecrets)
                close(fd)
                fd = next
            } catch {
                close(fd)
                throw error
            }
        }
        return TrustedDirectory(path: target, descriptor: fd, forSecrets: forSecrets)
    }

    /// Checks the open directory again: its owner and mode may have changed since it was opened.
    func check() throws(StoreError) {
        try Self.checkStatus(of: descriptor, path: path, isTarget: true, forSecrets: forSecrets)
    }

    private static func openChecked(_ name: String, at parent: Int32, path: String, isTarget: Bool, forSecrets: Bool) throws(StoreError) -> Int32 {
        let fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            // NB: Linux says ENOTDIR, not ELOOP, for a link opened with O_DIRECTORY | O_NOFOLLOW.
            var status = stat()
            let isLink = fstatat(parent, name, &status, AT_SYMLINK_NOFOLLOW) == 0 && status.st_mode & S_IFMT == S_IFLNK
            switch code {
            case _ where isLink: throw .untrustedDirectory(path: path, reason: "it is a symbolic link")
            case ENOTDIR: throw .unwritable(path: path, reason: "it exists and is not a directory")
            case ENOENT: throw .missingDirectory(path: path)
            default: throw .unreadable(path: path, reason: FileSystem.lastError())
            }
        }
        do {
            try checkStatus(of: fd, path: path, isTarget: isTarget, forSecrets: forSecrets)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Whether `gid` is this user's own group with no other members: neither listed in the
    /// group database nor any other account's primary group (read from the account database;
    /// a group whose members can't be read is not private).
    private static func isPrivateGroup(_ gid: gid_t) -> Bool {
        guard gid == getegid() else { return false }
        var group = group()
        var found: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrgid_r(gid, &group, &buffer, buffer.count, &found) == 0, found != nil else { return false }
        var listed = 0
        while let member = group.gr_mem?[listed] { listed += 1; _ = member }
        return isPrivateGroup(gid, me: geteuid(), listedMembers: listed, primaryGroups: primaryGroups())
    }

    /// The rule, over what the databases say: `gid` is private to `me` when it lists no member
    /// and is no other account's primary group.
    package static func isPrivateGroup(_ gid: gid_t, me: uid_t, listedMembers: Int, primaryGroups: [(uid: uid_t, gid: gid_t)]) -> Bool {
        listedMembers == 0 && !primaryGroups.contains { $0.gid == gid && $0.uid != me }
    }

    /// Every account's user and primary group, from the account database.
    // NB: `getpwent` walks one process-wide cursor; the lock keeps this package's walks apart.
    private static func primaryGroups() -> [(uid: uid_t, gid: gid_t)] {
        accountWalk.withLock {
            setpwent()
            defer { endpwent() }
            var accounts: [(uid: uid_t, gid: gid_t)] = []
            while let account = getpwent() { accounts.append((account.pointee.pw_uid, account.pointee.pw_gid)) }
            return accounts
        }
    }

    private static let accountWalk = LockedBox(())

    /// ``primaryGroups()``, for the tests.
    package static func primaryGroupsForTesting() -> [(uid: uid_t, gid: gid_t)] { primaryGroups() }

    private static func checkStatus(of fd: Int32, path: String, isTarget: Bool, forSecrets: Bool) throws(StoreError) {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw .unreadable(path: path, reason: FileSystem.lastError()) }
        let me = geteuid()
        let mode = String(status.st_mode & 0o7777, radix: 8)
        if isTarget {
            guard status.st_uid == me else {
                throw .untrustedDirectory(path: path, reason: "it is owned by uid \(status.st_uid), not by this user (uid \(me))")
            }
        } else if status.st_uid != 0 && status.st_uid != me {
            throw .untrustedDirectory(path: path, reason: "this ancestor of the store is owned by uid \(status.st_uid), neither root nor this user (uid \(me))")
        }
        if status.st_mode & (S_IWGRP | S_IWOTH) != 0 {
            let sticky = status.st_mode & S_ISVTX != 0
            // NB: a sticky shared directory (/tmp) is meant for everyone: as an ancestor it is
            // safe (only an entry's owner can move it); as the store's own directory it is not.
            if sticky && !isTarget { return }
            if !isTarget, status.st_mode & S_IWOTH == 0, isPrivateGroup(status.st_gid) { return }
            throw .untrustedDirectory(
                path: path,
                reason: sticky
                    ? "it is a shared directory (mode \(mode)) that others can write to; keep the store in a directory of your own inside it"
                    : "it is writable by group or others (mode \(mode)); make it 0700"
            )
        }
        if isTarget, forSecrets, status.st_mode & 0o077 != 0 {
            throw .untrustedDirectory(path: path, reason: "it holds secrets and others can read or enter it (mode \(mode)); make it 0700")
        }
    }
}
