import Foundation
import Habitat
import HabitatPersistence
#if canImport(Security)
import HabitatKeychain
#endif

/// Where the app keeps its session.
public nonisolated enum AppStorage {
    /// The session store: the snapshot in a JSON file under `directory`, the token in the
    /// Keychain on Apple platforms (in an owner-only file elsewhere).
    ///
    /// - Parameter directory: The app's data directory (Application Support on Apple platforms).
    /// - Throws: `StoreError` when the directory can't be made or trusted.
    public static func sessions(in directory: URL) throws -> SessionStore<MainApp> {
        #if canImport(Security)
        let secrets: any SecretStore = KeychainSecretStore()   // service: the bundle identifier
        #else
        let secrets: any SecretStore = try FileSecretStore(directory: directory.appendingPathComponent("secrets"))
        #endif
        return SessionStore(store: try JSONFileStore(url: directory.appendingPathComponent("session.json")), secrets: secrets)
    }
}
