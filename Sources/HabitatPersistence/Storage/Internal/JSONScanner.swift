import Foundation
import Habitat

/// A strict JSON scanner that validates a document and reports where each value lies, without
/// building it.
///
/// NB: it exists so the JSON file store can keep each value as plain JSON inside its document
/// and hand the exact bytes back: a value is then decoded once, by the caller's `Decodable`,
/// instead of once as a string inside the document and again as JSON. It validates everything
/// RFC 8259 asks (structure, strings and their escapes, UTF-8, numbers, literals) and refuses
/// nesting deeper than `maximumDepth` instead of recursing without bound.
struct JSONScanner {
    struct Failure: Error, Equatable {
        let reason: String

        static func invalid(_ reason: String) -> Failure { Failure(reason: reason) }

        static let tooDeep = Failure(reason: "nested deeper than \(maximumDepth) levels")
    }

    /// How deep objects and arrays may nest.
    static let maximumDepth = 512

    /// The document; valid only inside `scan(_:_:)`'s closure.
    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Runs `body` with a scanner over `data`.
    ///
    /// NB: the scanner reads raw memory, without bounds checks on each byte: it measured several
    /// times faster than indexing an array, and every index is checked against `count` first.
    static func scan<R>(_ data: some ContiguousBytes, _ body: (inout JSONScanner) -> R) -> R {
        data.withUnsafeBytes { raw in
            var scanner = JSONScanner(raw.bindMemory(to: UInt8.self))
            return body(&scanner)
        }
    }

    // MARK: Entry points

    /// What a byte string is, as a value stored in a document.
    enum Classification: Equatable {
        /// Exactly one JSON value with no whitespace around it, shallow enough to sit at the
        /// depth asked for.
        case value
        /// One JSON value, but nested too deep to sit at that depth: a document holding it
        /// would fail to read.
        case tooDeep
        /// Anything else.
        case notJSON
    }

    /// Whether `data` is exactly one JSON value that can sit `depth` levels deep in a document
    /// (the read's limit counts from the document's top).
    static func classify(_ data: Data, at depth: Int) -> Classification {
        guard let first = data.first, !isWhitespace(first), let last = data.last, !isWhitespace(last) else {
            return .notJSON
        }
        return scan(data) { scanner in
            do throws(Failure) {
                try scanner.skipValue(depth: depth)
                return scanner.position == scanner.bytes.count ? .value : .notJSON
            } catch {
                return error == .tooDeep ? .tooDeep : .notJSON
            }
        }
    }

    /// Scans an object at the top level and calls `member` with each key and its value's range.
    mutating func scanTopLevelObject(_ member: (String, Range<Int>, inout JSONScanner) throws(Failure) -> Void) throws(Failure) {
        skipWhitespace()
        try scanObject(depth: 0, member)
        skipWhitespace()
        guard position == bytes.count else { throw .invalid("unexpected content after the document at byte \(position)") }
    }

    /// Scans the object in `range` and calls `member` with each key and its value's range.
    mutating func scanObject(in range: Range<Int>, _ member: (String, Range<Int>, inout JSONScanner) throws(Failure) -> Void) throws(Failure) {
        let saved = position
        position = range.lowerBound
        defer { position = saved }
        try scanObject(depth: 1, member)
    }

    /// The string in `range`, decoded.
    mutating func string(in range: Range<Int>) throws(Failure) -> String {
        let saved = position
        position = range.lowerBound
        defer { position = saved }
        return try scanString()
    }

    /// The integer in `range`, if it is one that fits an `Int`.
    func integer(in range: Range<Int>) -> Int? {
        Int(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self))
    }

    /// The bytes in `range`, copied.
    func data(in range: Range<Int>) -> Data { Data(UnsafeBufferPointer(rebasing: bytes[range])) }

    func isObject(_ range: Range<Int>) -> Bool { bytes[range.lowerBound] == UInt8(ascii: "{") }
    func isString(_ range: Range<Int>) -> Bool { bytes[range.lowerBound] == UInt8(ascii: "\"") }

    // MARK: Grammar

    /// Scans an object; with `decodingKeys` false, keys are validated but not built (and
    /// `member` receives empty keys), which is what skipping a nested object needs.
    private mutating func scanObject(
        depth: Int,
        decodingKeys: Bool = true,
        _ member: (String, Range<Int>, inout JSONScanner) throws(Failure) -> Void
    ) throws(Failure) {
        guard depth < Self.maximumDepth else { throw .tooDeep }
        try expect(UInt8(ascii: "{"))
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            let key: String
            if decodingKeys {
                key = try scanString()
            } else {
                try skipString()
                key = ""
            }
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            let start = position
            try skipValue(depth: depth + 1)
            try member(key, start..<position, &self)
            skipWhitespace()
            guard let next = next() else { throw .invalid("unterminated object") }
            if next == UInt8(ascii: "}") { return }
            guard next == UInt8(ascii: ",") else { throw .invalid("expected ',' or '}' at byte \(position - 1)") }
        }
    }

    private mutating func skipValue(depth: Int) throws(Failure) {
        guard depth < Self.maximumDepth else { throw .tooDeep }
        guard let byte = peek() else { throw .invalid("expected a value at the end") }
        switch byte {
        case UInt8(ascii: "{"):
            try scanObject(depth: depth, decodingKeys: false) { (_, _, _) throws(Failure) in }
        case UInt8(ascii: "["):
            position += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                position += 1
                return
            }
            while true {
                skipWhitespace()
                try skipValue(depth: depth + 1)
                skipWhitespace()
                guard let next = next() else { throw .invalid("unterminated array") }
                if next == UInt8(ascii: "]") { return }
                guard next == UInt8(ascii: ",") else { throw .invalid("expected ',' or ']' at byte \(position - 1)") }
            }
        case UInt8(ascii: "\""):
            try skipString()
        case UInt8(ascii: "t"):
            try expectLiteral("true")
        case UInt8(ascii: "f"):
            try expectLiteral("false")
        case UInt8(ascii: "n"):
            try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try skipNumber()
        default:
            throw .invalid("unexpected byte at \(position)")
        }
    }

    private mutating func skipNumber() throws(Failure) {
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), Self.isDigit(first) else { throw .invalid("invalid number at byte \(position)") }
        position += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if peek() == UInt8(ascii: ".") {
            position += 1
            guard let digit = peek(), Self.isDigit(digit) else { throw .invalid("invalid number at byte \(position)") }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), Self.isDigit(digit) else { throw .invalid("invalid number at byte \(position)") }
            skipDigits()
        }
    }

    private mutating func skipDigits() {
        while let byte = peek(), Self.isDigit(byte) { position += 1 }
    }

    /// Validates a string without building it: escapes, control characters and UTF-8.
    private mutating func skipString() throws(Failure) {
        try expect(UInt8(ascii: "\""))
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return
            case UInt8(ascii: "\\"):
                _ = try scanEscape()
            case 0..<0x20:
                throw .invalid("unescaped control character in a string at byte \(position - 1)")
            case 0x20..<0x80:
                continue
            default:
                try skipUTF8Continuation(lead: byte)
            }
        }
        throw .invalid("unterminated string")
    }

    /// Checks the rest of a multi-byte UTF-8 sequence that starts with `lead`.
    private mutating func skipUTF8Continuation(lead: UInt8) throws(Failure) {
        let count: Int
        var minimum: UInt32
        var scalar: UInt32
        switch lead {
        case 0xC2...0xDF: count = 1; minimum = 0x80; scalar = UInt32(lead & 0x1F)
        case 0xE0...0xEF: count = 2; minimum = 0x800; scalar = UInt32(lead & 0x0F)
        case 0xF0...0xF4: count = 3; minimum = 0x10000; scalar = UInt32(lead & 0x07)
        default: throw .invalid("invalid UTF-8 in a string at byte \(position - 1)")
        }
        guard position + count <= bytes.count else { throw .invalid("invalid UTF-8 in a string at byte \(position - 1)") }
        for _ in 0..<count {
            let next = bytes[position]
            guard next & 0xC0 == 0x80 else { throw .invalid("invalid UTF-8 in a string at byte \(position)") }
            scalar = scalar << 6 | UInt32(next & 0x3F)
            position += 1
        }
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
            throw .invalid("invalid UTF-8 in a string at byte \(position - count - 1)")
        }
    }

    /// Scans a string and returns it decoded.
    private mutating func scanString() throws(Failure) -> String {
        let start = position
        try skipString()
        let content = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<(position - 1)])
        guard content.contains(UInt8(ascii: "\\")) else {
            // Validated above, so decoding can't repair anything.
            return String(decoding: content, as: UTF8.self)
        }
        var decoded = String.UnicodeScalarView()
        var scanner = JSONScanner(content)
        var runStart = 0
        while scanner.position < content.count {
            if content[scanner.position] == UInt8(ascii: "\\") {
                decoded.append(contentsOf: String(decoding: UnsafeBufferPointer(rebasing: content[runStart..<scanner.position]), as: UTF8.self).unicodeScalars)
                scanner.position += 1
                decoded.append(try scanner.scanEscape())
                runStart = scanner.position
            } else {
                scanner.position += 1
            }
        }
        decoded.append(contentsOf: String(decoding: UnsafeBufferPointer(rebasing: content[runStart...]), as: UTF8.self).unicodeScalars)
        return String(decoded)
    }

    private mutating func scanEscape() throws(Failure) -> Unicode.Scalar {
        guard let byte = next() else { throw .invalid("unterminated escape") }
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let first = try scanHex4()
            if (0xD800..<0xDC00).contains(first) {
                guard next() == UInt8(ascii: "\\"), next() == UInt8(ascii: "u") else {
                    throw .invalid("unpaired surrogate in a string")
                }
                let second = try scanHex4()
                guard (0xDC00..<0xE000).contains(second),
                      let scalar = Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
                else { throw .invalid("invalid surrogate pair in a string") }
                return scalar
            }
            guard let scalar = Unicode.Scalar(first) else { throw .invalid("unpaired surrogate in a string") }
            return scalar
        default:
            throw .invalid("invalid escape at byte \(position - 1)")
        }
    }

    private mutating func scanHex4() throws(Failure) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = next() else { throw .invalid("unterminated escape") }
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw .invalid("invalid \\u escape")
            }
            value = value * 16 + digit
        }
        return value
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(Failure) {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw .invalid("invalid literal at byte \(position)") }
        let matches = literal.withUTF8Buffer { expected in
            expected.elementsEqual(bytes[position..<(position + count)])
        }
        guard matches else { throw .invalid("invalid literal at byte \(position)") }
        position += count
    }

    private mutating func expect(_ byte: UInt8) throws(Failure) {
        guard next() == byte else {
            throw .invalid("expected '\(Character(Unicode.Scalar(byte)))' at byte \(max(0, position - 1))")
        }
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private mutating func next() -> UInt8? {
        guard position < bytes.count else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), Self.isWhitespace(byte) { position += 1 }
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
