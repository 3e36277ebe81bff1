import Foundation
import Habitat
@testable import HabitatPersistence
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file stores open their directory once, check it and its ancestors as OpenSSH's
/// `StrictModes` would, and reach every file through that open directory: another local user
/// can't redirect a read or a write by swapping a path.
@Suite struct TrustedDirectoryTests {
    /// The uid of `nobody`: another local user, for the tests that need one (run as root).
    static let otherUser: uid_t = 65_534
    static let isRoot = geteuid() == 0

    @Test(.enabled(if: isRoot, "chown needs root (CI runs as root)"))
    func anAncestorOwnedByAnotherUserIsRefusedNamingIt() throws {
        let directory = try TemporaryDirectory()
        let theirs = directory.file("theirs")
        try FileManager.default.createDirectory(at: theirs, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        #expect(chown(theirs.path, Self.otherUser, Self.otherUser) == 0)
        #expect(throws: StoreError.untrustedDirectory(
            path: theirs.path, reason: "this ancestor of the store is owned by uid 65534, neither root nor this user (uid 0)"
        )) { try FileSecretStore(directory: theirs.appendingPathComponent("secrets")) }
        #expect(throws: StoreError.self) { try JSONFileStore(url: theirs.appendingPathComponent("app/session.json")) }
        #expect(!FileManager.default.fileExists(atPath: theirs.appendingPathComponent("secrets").path), "nothing was created in it")
    }

    @Test(.enabled(if: isRoot, "chown needs root (CI runs as root)"))
    func aStoreDirectoryOwnedByAnotherUserIsRefused() throws {
        let directory = try TemporaryDirectory()
        let theirs = directory.file("secrets")
        try FileManager.default.createDirectory(at: theirs, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        #expect(chown(theirs.path, Self.otherUser, Self.otherUser) == 0)
        #expect(throws: StoreError.untrustedDirectory(path: theirs.path, reason: "it is owned by uid 65534, not by this user (uid 0)")) {
            try FileSecretStore(directory: theirs)
        }
    }

    @Test func anAncestorOthersCanWriteIsRefusedAndAStickyOneIsFine() throws {
        let directory = try TemporaryDirectory()
        let shared = directory.file("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
        chmod(shared.path, 0o777)
        #expect(throws: StoreError.untrustedDirectory(path: shared.path, reason: "it is writable by group or others (mode 777); make it 0700")) {
            try FileSecretStore(directory: shared.appendingPathComponent("app/secrets"))
        }
        chmod(shared.path, 0o1777)   // as /tmp: only an entry's owner may move it
        let store = try FileSecretStore(directory: shared.appendingPathComponent("app/secrets"))
        try store.setSecret(Data("mine".utf8), forKey: "token")
        #expect(try store.secret(forKey: "token") == Data("mine".utf8))
    }

    @Test(.enabled(if: isRoot, "chgrp to another group needs root (CI runs as root)"))
    func anAncestorWritableByAnotherGroupIsRefusedAndByTheUsersOwnPrivateGroupIsFine() throws {
        let directory = try TemporaryDirectory()
        let shared = directory.file("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
        chmod(shared.path, 0o775)
        #expect(chown(shared.path, 0, Self.otherUser) == 0)   // the group `nogroup`: not this user's
        #expect(throws: StoreError.untrustedDirectory(path: shared.path, reason: "it is writable by group or others (mode 775); make it 0700")) {
            try FileSecretStore(directory: shared.appendingPathComponent("app/secrets"))
        }
        // The user's own group, with no other members (root's, here): a umask 002 system's parents.
        #expect(chown(shared.path, 0, getegid()) == 0)
        chmod(shared.path, 0o775)
        let store = try FileSecretStore(directory: shared.appendingPathComponent("app/secrets"))
        try store.setSecret(Data("mine".utf8), forKey: "token")
        #expect(try store.secret(forKey: "token") == Data("mine".utf8))
    }

    @Test func aSecretsDirectoryOthersCanReadIsRefused() throws {
        let directory = try TemporaryDirectory()
        let secrets = directory.file("secrets")
        try FileManager.default.createDirectory(at: secrets, withIntermediateDirectories: false)
        chmod(secrets.path, 0o755)
        #expect(throws: StoreError.untrustedDirectory(
            path: secrets.path, reason: "it holds secrets and others can read or enter it (mode 755); make it 0700"
        )) { try FileSecretStore(directory: secrets) }
        chmod(secrets.path, 0o700)
        let store = try FileSecretStore(directory: secrets)
        try store.setSecret(Data("mine".utf8), forKey: "token")
        chmod(secrets.path, 0o711)
        #expect(throws: StoreError.self, "checked again at every read") { try store.secret(forKey: "token") }
        chmod(secrets.path, 0o700)
        #expect(try store.secret(forKey: "token") == Data("mine".utf8), "nothing was lost")
    }

    /// The reproduction: the store's directory swapped for a link to a directory someone
    /// planted a token in. Reads and writes keep going to the directory the store opened.
    @Test func aDirectorySwappedForALinkAfterOpeningRedirectsNothing() throws {
        let directory = try TemporaryDirectory()
        let secrets = directory.file("secrets")
        let store = try FileSecretStore(directory: secrets)
        try store.setSecret(Data("mine".utf8), forKey: "token")
        let sessions = try JSONFileStore(url: directory.file("app/session.json"))
        try sessions.write(["user": Data(#""ada""#.utf8)])

        let planted = directory.file("planted")
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try Data("theirs".utf8).write(to: planted.appendingPathComponent("token"))
        try Data(#"{"format":"habitat.kv","version":1,"values":{"user":"mallory"}}"#.utf8).write(to: planted.appendingPathComponent("session.json"))
        #expect(rename(secrets.path, directory.file("secrets-moved").path) == 0)
        #expect(rename(directory.file("app").path, directory.file("app-moved").path) == 0)
        try FileManager.default.createSymbolicLink(at: secrets, withDestinationURL: planted)
        try FileManager.default.createSymbolicLink(at: directory.file("app"), withDestinationURL: planted)

        #expect(try store.secret(forKey: "token") == Data("mine".utf8), "the planted token is never read")
        #expect(try sessions.data(forKey: "user") == Data(#""ada""#.utf8))
        try store.setSecret(Data("rotated".utf8), forKey: "token")
        try sessions.write(["user": Data(#""grace""#.utf8)])
        #expect(try Data(contentsOf: planted.appendingPathComponent("token")) == Data("theirs".utf8), "no write lands in theirs")
        #expect(try Data(contentsOf: directory.file("secrets-moved/token")) == Data("rotated".utf8))
        #expect(try JSONFileStore(url: directory.file("app-moved/session.json")).data(forKey: "user") == Data(#""grace""#.utf8))
        #expect(throws: StoreError.untrustedDirectory(path: secrets.path, reason: "it is a symbolic link"), "and a new store refuses the link") {
            try FileSecretStore(directory: secrets)
        }
    }

    /// The same swap, raced: a thread swaps the directory and a planted link back and forth
    /// while the store reads and writes. No read returns the planted token; no write lands there.
    @Test func aSwapRacedAgainstReadsAndWritesPlantsNothing() async throws {
        let directory = try TemporaryDirectory()
        let secrets = directory.file("secrets")
        let store = try FileSecretStore(directory: secrets)
        try store.setSecret(Data("mine".utf8), forKey: "token")
        let planted = directory.file("planted")
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try Data("theirs".utf8).write(to: planted.appendingPathComponent("token"))
        let real = directory.file("real").path, link = directory.file("link").path
        symlink(planted.path, link)

        let stop = Flag()
        let swapper = Thread {
            while !stop.isSet {
                rename(secrets.path, real)
                rename(link, secrets.path)   // the link where the directory was
                rename(secrets.path, link)
                rename(real, secrets.path)
            }
        }
        swapper.start()
        var plantedReads = 0
        for round in 0..<2_000 {
            if try store.secret(forKey: "token") != Data("mine".utf8) { plantedReads += 1 }
            if round % 10 == 0 { try store.setSecret(Data("mine".utf8), forKey: "token") }
        }
        stop.set()
        while !swapper.isFinished { try await Task.sleep(for: .milliseconds(5)) }
        #expect(plantedReads == 0)
        #expect(try Data(contentsOf: planted.appendingPathComponent("token")) == Data("theirs".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: planted.path) == ["token"], "no write or temporary file landed there")
    }
}

/// A flag one thread sets and another reads.
private final class Flag: Sendable {
    private let value = LockedBox(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// A group-writable ancestor is trusted only as this user's private group: no listed member, and
/// no other account whose primary group it is (another user whose primary group it is could
/// swap the store's directory: issue 57, item 5).
@Suite struct PrivateGroupRuleTests {
    let me: uid_t = 1000
    let group: gid_t = 1000

    @Test func aGroupOfMyOwnWithNobodyElseInItIsPrivate() {
        #expect(TrustedDirectory.isPrivateGroup(group, me: me, listedMembers: 0, primaryGroups: [(me, group), (uid_t(0), gid_t(0)), (uid_t(1001), gid_t(1001))]))
    }

    @Test func anotherAccountWhosePrimaryGroupItIsMakesItShared() {
        #expect(!TrustedDirectory.isPrivateGroup(group, me: me, listedMembers: 0, primaryGroups: [(me, group), (uid_t(1001), group)]))
    }

    @Test func aListedMemberMakesItShared() {
        #expect(!TrustedDirectory.isPrivateGroup(group, me: me, listedMembers: 1, primaryGroups: [(me, group)]))
    }

    /// The real databases of this machine, read as the store reads them: the walk finds this
    /// user's own account (so the rule sees the account database at all).
    @Test func theAccountDatabaseIsRead() {
        let accounts = TrustedDirectory.primaryGroupsForTesting()
        #expect(accounts.contains { $0.uid == geteuid() } || getpwuid(geteuid()) == nil)
    }
}
