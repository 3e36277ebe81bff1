extension EnvironmentStack: CustomStringConvertible, CustomReflectable {
    /// The frames of the calling task's stack (its innermost scope of this stack, inside one),
    /// top first: how each was made, and which fields differ from the frame below.
    ///
    /// ```swift
    /// appEnvironment.push(label: "preview") { $0.locale = Locale(identifier: "de_DE") }
    /// for frame in appEnvironment.frames { print(frame) }
    /// // 2: push "preview" at MyApp/Previews.swift:12, changed locale
    /// // 1: base at MyApp/appEnvironment.swift:3
    /// ```
    ///
    /// This is for people: a debugger, a log line, a failing test. It copies every frame's
    /// environment, so keep it off hot paths.
    public var frames: [StackFrame<App>] {
        let frames = withActiveState { $0.frames }
        return frames.indices.reversed().map { index in
            let frame = frames[index]
            let changed = index == 0 ? [] : frame.environment.fieldsDiffering(from: frames[index - 1].environment)
            return StackFrame(origin: frame.origin, environment: frame.environment, changedFields: changed, depth: index + 1)
        }
    }

    /// The stack's depth, whether someone is signed in on its top, and where the top frame came
    /// from (the calling task's scope, inside one); never the token, and of the user only the
    /// account's name (``EnvironmentSchema/accountID(of:)``: the `id`, when the app's user type
    /// is `Identifiable`), when it has one, so logs carry no personal data.
    ///
    /// ```swift
    /// print(appEnvironment)
    /// // EnvironmentStack<AppSchema>(depth: 1, logged in as id 1, authenticated; top: login at MyApp/LoginModel.swift:40)
    /// ```
    public var description: String {
        let frames = withActiveState { $0.frames }
        let top = frames[frames.count - 1]
        let session = top.environment.session.map { session in
            let name = App.accountID(of: session.user)
            return "logged in\(name.isEmpty ? "" : " as id \(name)"), \(session.state)"
        } ?? "logged out"
        return "EnvironmentStack<\(App.self)>(depth: \(frames.count), \(session); top: \(top.origin))"
    }

    /// What `dump` shows: the depth and the frames, top first, each with its origin, the fields
    /// it changed and its environment (not the storage behind them).
    public var customMirror: Mirror {
        Mirror(self, children: ["depth": depth, "frames": frames], displayStyle: .class)
    }
}
