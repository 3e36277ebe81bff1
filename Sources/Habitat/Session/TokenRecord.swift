import Foundation

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

    init(tokens: [Entry]) {
        self.tokens = tokens
    }

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
