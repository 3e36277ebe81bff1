extension EnvironmentStack: CustomStringConvertible, CustomReflectable {
    /// The stack's depth and who is signed in on its top (the calling task's scope, inside one);
    /// never the token.
    ///
    /// ```swift
    /// print(AppEnvironment)   // EnvironmentStack<MyApp>(depth: 1, logged in as Account(id: 1, name: "Ada"), authenticated)
    /// ```
    public var description: String {
        let top = current
        let session = top.session.map { "logged in as \($0.user), \($0.state)" } ?? "logged out"
        return "EnvironmentStack<\(App.self)>(depth: \(depth), \(session))"
    }

    /// What `dump` shows: the depth and the current environment (not the storage behind them).
    public var customMirror: Mirror {
        Mirror(self, children: ["depth": depth, "current": current], displayStyle: .class)
    }
}
