import Foundation
import Habitat

/// What a ``SessionStore`` keeps in its secret store, in two kinds of item.
///
/// An account's item (`tokenKey(forAccount:)`) holds its token: the newest save's and, while a
/// save that changes it is under way, the previous one too, each under the pairing identifier
/// its snapshot names. The index (`tokenKey`) holds no token: it names every account's item and
/// the active account. Before 0.2 the index held the active account's tokens itself
/// (`SessionStore.storedTokens(for:)` moves them).
struct TokenRecord: Codable, Equatable {
    struct Entry: Codable, Equatable {
        var id: String
        var secret: String
    }

    static let formatName = "habitat.token"
    var format = formatName
    /// Newest first. In the index, empty (but in the layout before 0.2).
    var tokens: [Entry]
    /// In the index only: every signed-in account's name, each with the pairing identifier of
    /// the newest token in its own item. It lists every item a save may have left, so a load
    /// finds (and judges) them without listing the secret store. (Before 0.2: every account but
    /// the active one.)
    var others: [String: String]?

    /// In the index: the active account's name; `nil` when nobody is signed in (before 0.2,
    /// also when the name was empty).
    var account: String?

    init(tokens: [Entry], others: [String: String]? = nil, account: String? = nil) {
        self.tokens = tokens
        self.others = others?.isEmpty == true ? nil : others
        self.account = account
    }

    /// Whether the record holds nothing: the item is then deleted rather than written.
    var isEmpty: Bool { tokens.isEmpty && others == nil }

    /// The record to write, or `nil` (delete the item) when it holds nothing.
    var encodedUnlessEmpty: Data? { isEmpty ? nil : encoded() }

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
