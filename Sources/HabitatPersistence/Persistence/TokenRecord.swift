import Foundation
import Habitat

/// What a ``SessionStore`` keeps in its secret store: the token of the newest save, and, while
/// a save that changes the token is under way, the previous token too, each under the pairing
/// identifier its snapshot names.
struct TokenRecord: Codable, Equatable {
    struct Entry: Codable, Equatable {
        var id: String
        var secret: String
    }

    static let formatName = "habitat.token"
    var format = formatName
    /// Newest first.
    var tokens: [Entry]
    /// In the record under the session store's `tokenKey` only: the other signed-in accounts'
    /// names, each with the pairing identifier of the token in its own item. It lists every item
    /// a save may have left, so a load finds (and judges) them without listing the secret store.
    var others: [String: String]?

    /// In the same record: the active account's name, when it has one, so a save that signs it
    /// out knows whose data to purge.
    var account: String?

    init(tokens: [Entry], others: [String: String]? = nil, account: String? = nil) {
        self.tokens = tokens
        self.others = others?.isEmpty == true ? nil : others
        self.account = tokens.isEmpty ? nil : account
    }

    /// Whether the record holds nothing: the item is then deleted rather than written.
    var isEmpty: Bool { tokens.isEmpty && others == nil }

    func encoded() -> Data {
        // NB: encoding two strings and an array of them cannot fail.
        (try? JSONEncoder().encode(self)) ?? Data()
    }

    /// The record in `data`, or `nil` when `data` is not one (a token stored plainly by an
    /// earlier version, or nothing).
    static func decode(_ data: Data?) -> TokenRecord? {
        guard let data, data.first == UInt8(ascii: "{"),
              let record = try? JSONDecoder().decode(TokenRecord.self, from: data),
              record.format == formatName
        else { return nil }
        return record
    }
}
