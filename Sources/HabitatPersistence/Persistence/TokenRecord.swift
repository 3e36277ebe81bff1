import Foundation
import Habitat

/// What a ``SessionStore`` keeps in its secret store, in two kinds of item.
///
/// An account's item (`tokenKey(forAccount:)`) holds its token: the newest save's and, while a
/// save that changes it is under way, the previous one too, each under the pairing identifier
/// its snapshot names. The index (`tokenKey`) holds no token: it names every account's item, so a
/// load finds them all. Before 0.2 it held the active account's tokens itself
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
    /// In the index only: every account's name that has an item. It lists every item a save may
    /// have left, so a load finds (and judges) them without listing the secret store. (Before
    /// 0.2: every account but the active one, each with its token's pairing identifier.)
    var others: [String: String]?

    /// Before 0.2, in the index: the active account's name, whose token the index held.
    var account: String?

    /// An index naming `names`.
    static func index(naming names: Set<String>) -> TokenRecord {
        TokenRecord(tokens: [], others: Dictionary(uniqueKeysWithValues: names.map { ($0, "") }))
    }

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
        // NB: encoding two strings and an array of them cannot fail. Sorted keys: the same
        // record is the same bytes in every process (a replayed trace compares stores by bytes).
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(self)) ?? Data()
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
