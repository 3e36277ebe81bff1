@testable import Habitat
@testable import HabitatPersistence
import HabitatTesting
import Testing

/// A save reads what the stack knows of the store before the environment it writes, so a
/// follower that adopts another process's change between the two reads can't make an old
/// session look current.
@Suite struct SaveOrderTests {
    @Test func aFollowerTakingARotationWhileASaveReadsNeverMakesItWriteTheOldTokenBack() throws {
        let sessions = SessionStore<TestApp>(store: InMemoryStore(), secrets: InMemorySecretStore())
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
        let (app, other) = (makeStack(), makeStack())
        try app.restore(from: sessions)
        try other.restore(from: sessions)
        other.login(user: .ada, token: AuthToken("rotated"))
        try other.save(to: sessions)

        // The save reads the environment (the old token); the follower runs right after it.
        try app.autosave.save({
            let environment = app.current
            app.takeStoredSessionIfChanged(in: sessions)
            #expect(app.current.session?.token.secret == "rotated", "the follower took the rotation")
            return environment
        }, to: sessions) { stored, others, replacing in
            app.adoptStoredSession(stored, others: others, replacing: replacing)
        }

        #expect(try sessions.load()?.session?.token.secret == "rotated", "the old token is never written back")
        #expect(app.current.session?.token.secret == "rotated")
    }
}
