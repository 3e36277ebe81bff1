public import Habitat

/// What a test's code saved and restored through the stack, in order (see ``EnvironmentTrait``).
///
/// Inside a test's scope made by the `.environment` trait, the stack's `save(to:)`,
/// `restore(from:)` (and so `restoreAtLaunch(from:)` and `logout(savingTo:)`) and autosave,
/// when aimed at a durable store (a file, user defaults: the app's real one), go to a store of
/// the test's own instead, fresh and in memory, with an in-memory secret store: a test never
/// writes the app's files or Keychain, and tests in parallel never see each other's saves. A
/// store in memory is the test's own and is used as named; `.sessions(store)` on the trait names
/// the store every save and restore goes to. Each is in the ledger, whichever store it reached.
///
/// ```swift
/// @Test(.environment(appEnvironment, services: .stub))
/// func signingInIsSaved() async throws {
///     appEnvironment.enableAutosave(to: sessions)   // the app's store; here, the test's own
///     try await signIn(id: 1, token: AuthToken("t"))
///     #expect(appEnvironment.testLedger.saved.last?.session?.user.id == 1)
/// }
/// ```
public struct TestLedger<App: EnvironmentSchema>: Sendable {
    /// One thing the test's code did with its storage.
    public enum Entry: Sendable {
        /// A save, as the store holds it afterwards (a signed-out save: no session, the token
        /// deleted).
        case saved(SessionSnapshot<App>)
        /// A restore, and what it read: `nil` when nothing was saved.
        case restored(SessionSnapshot<App>?)
    }

    /// Everything, in order.
    public let entries: [Entry]

    /// The saves, in order, as the store held them after each.
    public var saved: [SessionSnapshot<App>] {
        entries.compactMap { if case .saved(let snapshot) = $0 { snapshot } else { nil } }
    }

    /// The restores, in order, with what each read (`nil`: nothing saved).
    public var restored: [SessionSnapshot<App>?] {
        entries.compactMap { if case .restored(let snapshot) = $0 { .some(snapshot) } else { nil } }
    }
}

extension EnvironmentStack {
    /// The calling test's ledger of saves and restores (see ``TestLedger``); empty outside a
    /// test's scope made by the `.environment` trait.
    public var testLedger: TestLedger<App> {
        let storage = TestStorageBinding.current as? TestStorage<App>
        return TestLedger(entries: (storage?.entries ?? []).compactMap { entry in
            switch entry {
            case .saved(let snapshot): snapshot.map { .saved($0) }
            case .restored(let snapshot): .restored(snapshot)
            }
        })
    }
}
