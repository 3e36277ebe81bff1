/// One change to an ``EnvironmentStack``: what happened, and the environment before and after.
///
/// Changes arrive through ``EnvironmentStack/changes`` in the order they were made, each
/// exactly once to every subscriber.
///
/// ```swift
/// for await change in appEnvironment.changes where change.kind == .logout {
///     print("\(change.old.currentUser?.name ?? "?") logged out")
/// }
/// ```
public struct EnvironmentChange<App: EnvironmentSchema>: Sendable {
    /// What happened to the stack.
    public let kind: EnvironmentChangeKind
    /// The current environment before the change.
    public let old: HabitatEnvironment<App>
    /// The current environment after the change.
    public let new: HabitatEnvironment<App>
    /// The stack's depth after the change.
    public let depth: Int
    /// This change's position among all changes made to the same stack (or scope), from 1.
    ///
    /// Consecutive changes have consecutive numbers, so a gap means a change was missed.
    public let sequence: UInt64
    /// Where the change was made: the operation, the calling line and the label, if any.
    public let origin: FrameOrigin

    /// Creates a change record: the stack's change feed makes one for each committed change.
    /// - Parameters:
    ///   - kind: What happened.
    ///   - old: The current environment before the change.
    ///   - new: The current environment after the change.
    ///   - depth: The stack's depth after the change.
    ///   - sequence: The change's position among the stack's changes.
    ///   - origin: Where the change was made.
    package init(
        kind: EnvironmentChangeKind,
        old: HabitatEnvironment<App>,
        new: HabitatEnvironment<App>,
        depth: Int,
        sequence: UInt64,
        origin: FrameOrigin
    ) {
        self.kind = kind
        self.old = old
        self.new = new
        self.depth = depth
        self.sequence = sequence
        self.origin = origin
    }
}

/// What happened to an ``EnvironmentStack``: the ``EnvironmentChange/kind`` of a change.
///
/// NB: a struct with static members rather than an enum, so later kinds (a session restored
/// from disk, say) can be added without breaking exhaustive `switch`es in apps. The name is a
/// `StaticString`: every frame records its kind, and copying a static string retains nothing.
public struct EnvironmentChangeKind: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline let staticName: StaticString

    /// Creates a kind with a name: the kinds are Habitat's own, listed below.
    /// - Parameter name: A short name for the kind of change.
    @inlinable
    package init(_ name: StaticString) { self.staticName = name }

    /// Whether two kinds have the same name.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.description == rhs.description }

    /// Hashes the kind's name.
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }

    /// A new environment was pushed on top.
    @inlinable public static var push: Self { Self("push") }
    /// The top environment was popped.
    @inlinable public static var pop: Self { Self("pop") }
    /// The top environment was replaced.
    @inlinable public static var replace: Self { Self("replace") }
    /// A user logged in.
    @inlinable public static var login: Self { Self("login") }
    /// The user logged out.
    @inlinable public static var logout: Self { Self("logout") }
    /// The signed-in user's data changed.
    @inlinable public static var userUpdated: Self { Self("userUpdated") }
    /// The configuration changed.
    @inlinable public static var configUpdated: Self { Self("configUpdated") }
    /// A saved session and configuration were restored (see `EnvironmentStack.restore(from:)`).
    @inlinable public static var restore: Self { Self("restore") }
    /// The session store changed under the stack: another process, or another stack on the same
    /// store, logged out, logged in or rotated the token, and this stack took the stored session
    /// instead of saving over it.
    @inlinable public static var storeChanged: Self { Self("storeChanged") }
    /// The base of a stack, as ``EnvironmentStack/init(_:fileID:line:)`` made it: a frame's
    /// ``FrameOrigin/operation``, never a change's kind.
    @inlinable public static var base: Self { Self("base") }
    /// The base of a `withEnvironment` scope: a frame's ``FrameOrigin/operation``, never a
    /// change's kind.
    @inlinable public static var scope: Self { Self("scope") }
    /// A restored session was refreshed (see
    /// `EnvironmentStack.refreshSession(account:using:)`).
    @inlinable public static var refresh: Self { Self("refresh") }

    /// The kind's short name, such as `"push"` or `"login"`.
    public var description: String { staticName.description }
}
