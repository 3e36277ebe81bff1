import Foundation
import Habitat

// The snapshot's JSON form: `{"version": N, "payload": {...}}`, and how it is encoded,
// decoded and migrated forward.
extension SessionStore {
    /// The snapshot of `environment`, naming the active token by `pairID` and each other
    /// account's by its pair in `others` (by account name); other accounts keep their order.
    func encode(_ environment: HabitatEnvironment<App>, pairID: String?, others: [String: String] = [:]) throws(SnapshotError) -> Data {
        var accounts: [SavedSession] = []
        for other in environment.otherAccounts {
            let name = App.accountID(of: other.user)
            guard let pair = others[name], !accounts.contains(where: { $0.account == name }) else { continue }
            accounts.append(SavedSession(user: other.user, state: other.state, tokenExpiresAt: other.token.expiresAt, pairID: pair, account: name))
        }
        let envelope = Envelope(
            version: version,
            payload: Payload(
                session: environment.session.map {
                    SavedSession(user: $0.user, state: $0.state, tokenExpiresAt: $0.token.expiresAt, pairID: pairID)
                },
                accounts: accounts.isEmpty ? nil : accounts,
                config: environment.config,
                savedAt: environment.now()
            )
        )
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .secondsSince1970
            return try encoder.encode(envelope)
        } catch {
            throw .store(.encodingFailed(key: key, reason: describe(error)))
        }
    }

    func decodePayload(_ data: Data) throws(SnapshotError) -> Payload {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        // NB: the common case, a snapshot of the current version, decodes in one pass; only
        // when that fails is the version read on its own, to migrate or to report.
        if let current = try? decoder.decode(Envelope.self, from: data), current.version == version {
            return current.payload
        }
        let found: Int
        do {
            found = try decoder.decode(VersionProbe.self, from: data).version
        } catch {
            throw .invalidSnapshot(key: key, reason: describe(error))
        }
        guard found <= version else {
            throw .unsupportedVersion(key: key, found: found, newest: version)
        }
        guard found >= 1 else { throw .invalidSnapshot(key: key, reason: "invalid version \(found)") }
        var current = data
        for from in found..<version {
            guard let migration = migrations[from] else { throw .missingMigration(key: key, from: from) }
            do {
                current = try migration.migrate(current)
            } catch {
                throw .migrationFailed(key: key, from: from, reason: describe(error))
            }
        }
        do {
            return try decoder.decode(AnyVersionEnvelope.self, from: current).payload
        } catch {
            throw .invalidSnapshot(key: key, reason: describe(error))
        }
    }

    struct VersionProbe: Decodable { var version: Int }

    /// What is written: `{"version": N, "payload": {...}}`.
    struct Envelope: Codable {
        var version: Int
        var payload: Payload
    }

    /// What is read once the version is known and migrated: migrations may leave the version
    /// field as it was, so it is not checked again.
    struct AnyVersionEnvelope: Decodable {
        var payload: Payload
    }

    struct Payload: Codable {
        var session: SavedSession?
        /// The signed-in accounts that aren't the active one; absent with one account.
        var accounts: [SavedSession]?
        var config: App.Config
        var savedAt: Date?
    }

    struct SavedSession: Codable {
        var user: App.User
        var state: AuthState
        var tokenExpiresAt: Date?
        /// Names the token this snapshot belongs with in the secret store; `nil` in snapshots
        /// written before pairing.
        var pairID: String?
        /// The account's name (`EnvironmentSchema.accountID(of:)`), for the other accounts:
        /// its token is under `tokenKey(forAccount:)`.
        var account: String?
    }
}
