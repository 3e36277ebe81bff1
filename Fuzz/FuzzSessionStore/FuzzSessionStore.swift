// Feeds arbitrary bytes to a session store as a launch finds it: the snapshot, the token index
// and two accounts' token items, split at zero bytes. Whatever they hold (an earlier layout, a
// damaged record, a token of another account), a load gives a value or a typed error, never a
// crash or a hang; and a save that returns is what the next load reads: the same accounts, each
// with its own token, the active one active. A clear then leaves nothing to load.

import Foundation
import Habitat
import HabitatPersistence

struct FuzzUser: Codable, Sendable, Identifiable, Equatable { var id: String }
enum FuzzApp: EnvironmentSchema {
    typealias Services = Int
    typealias User = FuzzUser
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
    let parts = Data(bytes: bytes, count: count).split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false).map { Data($0) }
    let store = InMemoryStore(parts.isEmpty ? [:] : ["habitat.session": parts[0]])
    let secrets = InMemorySecretStore()
    for (key, part) in zip(["habitat.session.token", "habitat.session.token.ada", "habitat.session.token.grace"], parts.dropFirst()) {
        try? secrets.setSecret(part, forKey: key)
    }
    let sessions = SessionStore<FuzzApp>(store: store, secrets: secrets)

    // What a launch reads.
    _ = try? sessions.load()

    // A save over whatever was there, then what the next launch reads.
    var environment = HabitatEnvironment<FuzzApp>(services: 0)
    environment.session = UserSession(user: FuzzUser(id: "ada"), token: AuthToken("ada-token"))
    let stack = EnvironmentStack<FuzzApp>(environment)
    stack.addAccount(user: FuzzUser(id: "grace"), token: AuthToken("grace-token"))
    guard (try? sessions.save(stack.current)) != nil else { return 0 }
    let loaded: SessionSnapshot<FuzzApp>?
    do {
        loaded = try sessions.load()
    } catch {
        preconditionFailure("a save returned, and the next load failed: \(error)")
    }
    precondition(loaded?.session?.user.id == "grace" && loaded?.session?.token.secret == "grace-token",
                 "the saved active account is not what the next load reads: \(String(describing: loaded?.session))")
    precondition(loaded?.otherAccounts.map(\.user.id) == ["ada"] && loaded?.otherAccounts.first?.token.secret == "ada-token",
                 "the saved other account is not what the next load reads: \(String(describing: loaded?.otherAccounts))")

    // A clear leaves nothing to load.
    guard (try? sessions.clear()) != nil else { return 0 }
    do {
        let left = try sessions.load()
        precondition(left == nil, "a clear returned, and a load still found a session")
    } catch {
        preconditionFailure("a clear returned, and the next load failed: \(error)")
    }
    return 0
}
