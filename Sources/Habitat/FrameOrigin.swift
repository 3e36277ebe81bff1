import Foundation

/// How a frame of an ``EnvironmentStack`` came to be: the operation that made it, the source
/// line that called it, and the label the caller gave it, if any.
///
/// ```swift
/// appEnvironment.push(label: "preview") { $0.locale = Locale(identifier: "de_DE") }
/// print(appEnvironment.frames[0].origin)   // push "preview" at MyApp/Previews.swift:12
/// ```
///
/// Recording an origin costs nothing on the read path, and next to nothing on a write: a static
/// string, a line number and the label are stored with the frame.
public struct FrameOrigin: Sendable, Equatable, CustomStringConvertible {
    /// What made the frame: the kind of the change that wrote it (``EnvironmentChangeKind/push``,
    /// ``EnvironmentChangeKind/login``...), ``EnvironmentChangeKind/base`` for a stack's base, or
    /// ``EnvironmentChangeKind/scope`` for a scope's.
    public let operation: EnvironmentChangeKind
    /// The label the caller gave, such as `push(label: "preview")`.
    public let label: String?
    /// The line of the call.
    public let line: UInt
    @usableFromInline let staticFileID: StaticString

    /// Creates an origin: the stack's operations record one for each frame they write.
    /// - Parameters:
    ///   - operation: What made the frame.
    ///   - label: A label for people reading the stack.
    ///   - fileID: The calling file, as `#fileID` gives it (`Module/File.swift`).
    ///   - line: The calling line.
    @inlinable
    package init(_ operation: EnvironmentChangeKind, label: String? = nil, fileID: StaticString = #fileID, line: UInt = #line) {
        self.operation = operation
        self.label = label
        self.staticFileID = fileID
        self.line = line
    }

    /// The calling file, as `#fileID` gives it: `Module/File.swift`.
    public var fileID: String { staticFileID.description }

    /// `push "preview" at MyApp/Previews.swift:12`.
    public var description: String {
        let label = label.map { " \"\($0)\"" } ?? ""
        return "\(operation)\(label) at \(fileID):\(line)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.operation == rhs.operation && lhs.label == rhs.label && lhs.line == rhs.line && lhs.fileID == rhs.fileID
    }
}

/// One frame of an ``EnvironmentStack``, as ``EnvironmentStack/frames`` lists it: where it came
/// from, and which fields differ from the frame below.
public struct StackFrame<App: EnvironmentSchema>: Sendable, CustomStringConvertible {
    /// How the frame was made.
    public let origin: FrameOrigin
    /// The frame's environment.
    public let environment: HabitatEnvironment<App>
    /// The names of the fields that differ from the frame below (`"services"`, `"session"`,
    /// `"otherAccounts"`, `"config"`, `"calendar"`, `"locale"`, `"timeZone"`); empty for the base.
    ///
    /// Services are compared by their printed form, and the session by its user, token and
    /// state; `now` and `uuid` are closures, which can't be compared, and are never listed.
    /// Only names are listed, never a value.
    public let changedFields: [String]
    /// The frame's position: 1 for the base (its index in ``EnvironmentStack/frames``, plus 1).
    let depth: Int

    /// `3: push "preview" at MyApp/Previews.swift:12, changed locale`.
    public var description: String {
        let changed = changedFields.isEmpty ? "" : ", changed \(changedFields.joined(separator: ", "))"
        return "\(depth): \(origin)\(changed)"
    }
}

extension HabitatEnvironment {
    /// The names of the fields that differ from `other`'s (see ``StackFrame/changedFields``).
    func fieldsDiffering(from other: Self) -> [String] {
        var fields: [String] = []
        if String(reflecting: services) != String(reflecting: other.services) { fields.append("services") }
        if !Self.sameSession(session, other.session) { fields.append("session") }
        if otherAccounts.count != other.otherAccounts.count || !zip(otherAccounts, other.otherAccounts).allSatisfy({ Self.sameSession($0, $1) }) {
            fields.append("otherAccounts")
        }
        if Self.encoded(config) != Self.encoded(other.config) { fields.append("config") }
        if calendar != other.calendar { fields.append("calendar") }
        if locale != other.locale { fields.append("locale") }
        if timeZone != other.timeZone { fields.append("timeZone") }
        return fields
    }

    private static func sameSession(_ a: UserSession<App.User>?, _ b: UserSession<App.User>?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case let (a?, b?): a.token == b.token && a.state == b.state && encoded(a.user) == encoded(b.user)
        default: false
        }
    }

    private static func encoded(_ value: some Encodable) -> Data? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try? encoder.encode(value)
    }
}
