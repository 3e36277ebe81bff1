import Foundation
import Habitat
import HabitatPersistence
#if canImport(Security)
import HabitatKeychain
#endif

/// What the app does at launch: bring the last session back, sign in if nobody is, greet.
public func launch(dataDirectory: URL) async throws -> String {
    #if canImport(Security)
    let secrets: any SecretStore = KeychainSecretStore()   // the token in the Keychain
    #else
    let secrets: any SecretStore = try FileSecretStore(directory: dataDirectory.appendingPathComponent("secrets"))
    #endif
    let sessions = SessionStore<AppSchema>(
        store: try JSONFileStore(url: dataDirectory.appendingPathComponent("session.json")),
        secrets: secrets
    )
    let restored = appEnvironment.restoreAtLaunch(from: sessions)   // never throws
    print(restored)   // "nothing saved" the first time, "restored a session (restored)" the next
    appEnvironment.enableAutosave(to: sessions)   // every change is saved, off this thread
    if appEnvironment.current.currentUser == nil {
        try await signIn(id: 1, token: AuthToken("s3cr3t"))
    }
    await appEnvironment.flushAutosave()   // a program that exits now must wait for the save
    return try await greeting(for: appEnvironment.current.currentUser?.id ?? 0)
}
