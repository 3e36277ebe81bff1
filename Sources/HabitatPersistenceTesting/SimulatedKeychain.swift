public import Foundation
public import HabitatKeychain
import Habitat
import HabitatPersistence

/// A model of the Keychain's documented behaviour, for testing a `KeychainSecretStore` (and an
/// app's locked launches) on any platform without touching a real keychain.
///
/// ```swift
/// let keychain = SimulatedKeychain()
/// let secrets = KeychainSecretStore(service: "com.example.app", calls: keychain.calls)
/// keychain.device = .beforeFirstUnlock        // a launch after a restart
/// #expect(throws: StoreError.self) { try secrets.secret(forKey: "token") }
/// ```
///
/// What it models: items unique by service, account and access group; add that answers
/// "duplicate" for an existing item; the three read outcomes (found, not found, locked); the
/// device's lock states against each item's accessibility; a prewarmed launch before the first
/// unlock that answers "not found" for items that exist; access groups the app is entitled to
/// (a query naming no group reads and deletes in all of them, and adds to the first); a missing
/// entitlement (writes fail with -34018, reads say "not found", as on recent macOS); items
/// surviving the app's deletion (the model is not tied to any app's files); failures injected
/// into the next writes; and access control: items protected by user presence or biometry, read
/// only with an unlock's authentication that satisfies them (never with a prompt: a read without
/// one answers `errSecInteractionNotAllowed`), prompts that are accepted, denied, cancelled or
/// can't be shown, and a change of enrolled biometry that makes `.biometryCurrentSet` items
/// unreadable for good.
public final class SimulatedKeychain: Sendable {
    /// The device's lock state, as data protection sees it.
    public enum Device: Sendable, Hashable {
        /// Restarted and not unlocked since: no protected item can be read.
        case beforeFirstUnlock
        /// Unlocked since the restart, locked now: after-first-unlock items can be read.
        case locked
        /// Unlocked.
        case unlocked
    }

    /// One call the keychain received.
    public enum Call: Sendable, Hashable {
        /// `SecItemAdd` of the item.
        case add(KeychainItem)
        /// `SecItemCopyMatching` of the item.
        case copy(KeychainItem)
        /// `SecItemUpdate` of the item.
        case update(KeychainItem)
        /// `SecItemDelete` of the item.
        case delete(KeychainItem)
    }

    fileprivate struct Key: Hashable {
        var service: String
        var account: String
        var group: String
    }

    fileprivate struct Stored {
        var data: Data
        var accessibility: KeychainAccessibility
        var protection = KeychainProtection.none
        /// The biometry enrolment when the item was written.
        var enrolment = 0
    }

    /// How the next prompt is answered.
    public enum PromptAnswer: Sendable, Hashable {
        /// The user is recognised, by biometry or by the passcode.
        case accept(KeychainAuthentication.Method)
        /// The user isn't recognised.
        case deny
        /// The user cancels.
        case cancel
    }

    /// The evaluated context the model hands out with an authentication.
    private final class Context: Sendable {
        let id: Int
        init(id: Int) { self.id = id }
    }

    /// The keychain's contents and the device's state: the model below works on it, behind
    /// one lock.
    fileprivate struct Model {
        var items: [Key: Stored] = [:]
        var state = Device.unlocked
        var prewarmed = false
        var entitled = true
        var failures: [Int32] = []
        var calls: [Call] = []
        let groups: [String]
        var biometryEnrolled = true
        var enrolment = 0
        var canPrompt = true
        var answers: [PromptAnswer] = []
        var prompts = 0
        var nextContext = 0
        var liveContexts: [Int: KeychainAuthentication.Method] = [:]
    }

    private let model: LockedBox<Model>

    /// Makes an empty keychain, unlocked.
    /// - Parameter accessGroups: The keychain access groups the app is entitled to; the first is
    ///   where an item goes when a write names no group.
    public init(accessGroups: [String] = ["TEAMID.default"]) {
        precondition(!accessGroups.isEmpty, "an app belongs to at least one access group")
        model = LockedBox(Model(groups: accessGroups))
    }

    /// The device's lock state; ``Device/unlocked`` to begin with.
    public var device: Device {
        get { model.withLock { $0.state } }
        set { model.withLock { $0.state = newValue } }
    }

    /// Whether reads before the first unlock answer "not found" (`errSecItemNotFound`) instead of
    /// `errSecInteractionNotAllowed`, as one report says a prewarmed launch did.
    public var answersNotFoundBeforeFirstUnlock: Bool {
        get { model.withLock { $0.prewarmed } }
        set { model.withLock { $0.prewarmed = newValue } }
    }

    /// Whether the app is signed with a keychain entitlement; without one, writes fail with
    /// `errSecMissingEntitlement` and reads say "not found".
    public var isEntitled: Bool {
        get { model.withLock { $0.entitled } }
        set { model.withLock { $0.entitled = newValue } }
    }

    /// Makes the next writes (add or update) fail with `statuses`, one each, leaving the items
    /// as they were.
    /// - Parameter statuses: The statuses to answer, in order.
    public func failNextWrites(with statuses: Int32...) {
        model.withLock { $0.failures += statuses }
    }

    /// Every call so far, in order.
    public var receivedCalls: [Call] { model.withLock { $0.calls } }

    /// Whether a prompt can be shown now: `false` for an app in the background, or an extension.
    public var canPrompt: Bool {
        get { model.withLock { $0.canPrompt } }
        set { model.withLock { $0.canPrompt = newValue } }
    }

    /// Whether a face or finger is enrolled; without one, biometry-only items can't be written,
    /// and a prompt is answered by the passcode.
    public var biometryEnrolled: Bool {
        get { model.withLock { $0.biometryEnrolled } }
        set { model.withLock { $0.biometryEnrolled = newValue } }
    }

    /// Adds or removes a face or finger: every `.biometryCurrentSet` item becomes unreadable for
    /// good.
    public func changeEnrolment() {
        model.withLock { $0.enrolment += 1 }
    }

    /// Answers the next prompts with `answers`, in order; once they are used, a prompt is
    /// accepted (by biometry when enrolled, else by the passcode).
    public func answerNextPrompts(_ answers: PromptAnswer...) {
        model.withLock { $0.answers += answers }
    }

    /// How many prompts were shown.
    public var promptsShown: Int { model.withLock { $0.prompts } }

    /// The protection an item was last written with.
    public func storedProtection(service: String, account: String) -> KeychainProtection? {
        model.withLock { model in model.matches(KeychainItem(service: service, account: account)).first.flatMap { model.items[$0]?.protection } }
    }

    /// The data of the item named by `service` and `account` in `group` (any group when `nil`),
    /// read as the test's own eyes, ignoring the lock state.
    /// - Returns: The data, or `nil` when there is no such item.
    public func storedData(service: String, account: String, group: String? = nil) -> Data? {
        model.withLock { model in model.matches(KeychainItem(service: service, account: account, accessGroup: group)).first.flatMap { model.items[$0]?.data } }
    }

    /// The accessibility class an item was last written with.
    public func storedAccessibility(service: String, account: String) -> KeychainAccessibility? {
        model.withLock { model in model.matches(KeychainItem(service: service, account: account)).first.flatMap { model.items[$0]?.accessibility } }
    }

    /// How many items the keychain holds, in every group.
    public var itemCount: Int { model.withLock { $0.items.count } }

    /// The table of calls to give a `KeychainSecretStore`.
    public var calls: KeychainCalls {
        KeychainCalls(
            add: { item, data, accessibility in self.model.withLock { $0.add(item, data, accessibility) } },
            copy: { item in self.model.withLock { $0.copy(item) } },
            update: { item, data, accessibility in self.model.withLock { $0.update(item, data, accessibility) } },
            delete: { item in self.model.withLock { $0.delete(item) } },
            message: { status in "simulated keychain status \(status)" },
            read: { item, authentication in
                let method = authentication.flatMap(self.method(of:))
                return self.model.withLock { $0.read(item, method) }
            },
            addProtected: { item, data, accessibility, protection in
                self.model.withLock { $0.add(item, data, accessibility, protection) }
            },
            updateProtected: { item, data, authentication in
                let method = authentication.flatMap(self.method(of:))
                return self.model.withLock { $0.updateProtected(item, data, method) }
            },
            protection: { item in self.model.withLock { $0.protection(item) } },
            authenticate: { _, protection in self.authenticate(protection) },
            invalidate: { authentication in
                guard let context = authentication.withContext({ $0 as? Context }) else { return }
                self.model.withLock { _ = $0.liveContexts.removeValue(forKey: context.id) }
            }
        )
    }

    /// The method of a live authentication this model handed out; `nil` once invalidated.
    private func method(of authentication: KeychainAuthentication) -> KeychainAuthentication.Method? {
        guard let context = authentication.withContext({ $0 as? Context }) else { return nil }
        return model.withLock { $0.liveContexts[context.id] }
    }

    private func authenticate(_ protection: KeychainProtection) -> Result<KeychainAuthentication, KeychainUnlockError> {
        model.withLock { model in
            guard model.canPrompt else { return .failure(.notInteractive) }
            if protection.needsBiometry, !model.biometryEnrolled { return .failure(.notAvailable) }
            model.prompts += 1
            let fallback: PromptAnswer = .accept(model.biometryEnrolled ? .biometry : .passcode)
            let answer = model.answers.isEmpty ? fallback : model.answers.removeFirst()
            guard case .accept(let method) = answer else { return .failure(answer == .deny ? .denied : .cancelled) }
            model.nextContext += 1
            model.liveContexts[model.nextContext] = method
            return .success(KeychainAuthentication(method: method, context: Context(id: model.nextContext)))
        }
    }
}

// The model, on the state behind the lock.
extension SimulatedKeychain.Model {
    typealias Key = SimulatedKeychain.Key
    typealias Stored = SimulatedKeychain.Stored

    func matches(_ item: KeychainItem) -> [Key] {
        items.keys.filter {
            $0.service == item.service && $0.account == item.account && (item.accessGroup == nil || $0.group == item.accessGroup)
        }.sorted { $0.group < $1.group }
    }

    func readable(_ accessibility: KeychainAccessibility) -> Bool {
        switch (state, accessibility) {
        case (.unlocked, _), (.locked, .afterFirstUnlockThisDeviceOnly): true
        default: false
        }
    }

    /// The status a query gets before it touches an item, if any.
    mutating func refusal(_ item: KeychainItem, writing: Bool) -> Int32? {
        if let group = item.accessGroup, !groups.contains(group) { return KeychainStatus.missingEntitlement }
        if !entitled { return writing ? KeychainStatus.missingEntitlement : KeychainStatus.itemNotFound }
        if writing, !failures.isEmpty { return failures.removeFirst() }
        return nil
    }

    mutating func add(_ item: KeychainItem, _ data: Data, _ accessibility: KeychainAccessibility, _ protection: KeychainProtection = .none) -> Int32 {
        calls.append(.add(item))
        if let refusal = refusal(item, writing: true) { return refusal }
        let key = Key(service: item.service, account: item.account, group: item.accessGroup ?? groups[0])
        guard items[key] == nil else { return KeychainStatus.duplicateItem }
        guard readable(accessibility) else { return KeychainStatus.interactionNotAllowed }
        if protection.needsBiometry, !biometryEnrolled { return KeychainStatus.notAvailable }
        items[key] = Stored(data: data, accessibility: accessibility, protection: protection, enrolment: enrolment)
        return KeychainStatus.success
    }

    /// Whether an unlock's `method` opens `stored` now; the status it gets otherwise.
    func access(_ stored: Stored, _ method: KeychainAuthentication.Method?) -> Int32? {
        guard readable(stored.accessibility) else { return KeychainStatus.interactionNotAllowed }
        guard stored.protection != .none else { return nil }
        // NB: opening it would take a prompt, and a read never shows one.
        guard let method, stored.protection.isSatisfied(by: method) else { return KeychainStatus.interactionNotAllowed }
        // An item bound to the enrolment of its day is gone for good once it changed.
        if stored.protection == .biometryCurrentSet, stored.enrolment != enrolment { return KeychainStatus.itemNotFound }
        return nil
    }

    mutating func read(_ item: KeychainItem, _ method: KeychainAuthentication.Method?) -> (status: Int32, data: Data?) {
        calls.append(.copy(item))
        if let refusal = refusal(item, writing: false) { return (refusal, nil) }
        if state == .beforeFirstUnlock, prewarmed { return (KeychainStatus.itemNotFound, nil) }
        guard let key = matches(item).first, let stored = items[key] else { return (KeychainStatus.itemNotFound, nil) }
        if let refused = access(stored, method) { return (refused, nil) }
        return (KeychainStatus.success, stored.data)
    }

    mutating func updateProtected(_ item: KeychainItem, _ data: Data, _ method: KeychainAuthentication.Method?) -> Int32 {
        calls.append(.update(item))
        if let refusal = refusal(item, writing: true) { return refusal }
        guard let key = matches(item).first, let stored = items[key] else { return KeychainStatus.itemNotFound }
        if let refused = access(stored, method) { return refused }
        items[key]?.data = data
        return KeychainStatus.success
    }

    func protection(_ item: KeychainItem) -> (status: Int32, protection: KeychainProtection) {
        guard let key = matches(item).first, let stored = items[key] else { return (KeychainStatus.itemNotFound, .none) }
        return (KeychainStatus.success, stored.protection)
    }

    mutating func copy(_ item: KeychainItem) -> (status: Int32, data: Data?) {
        read(item, nil)
    }

    mutating func update(_ item: KeychainItem, _ data: Data, _ accessibility: KeychainAccessibility) -> Int32 {
        calls.append(.update(item))
        if let refusal = refusal(item, writing: true) { return refusal }
        guard let key = matches(item).first, let stored = items[key] else { return KeychainStatus.itemNotFound }
        guard readable(stored.accessibility), readable(accessibility) else { return KeychainStatus.interactionNotAllowed }
        // NB: the Keychain refuses a plain update of a protected item's data without its
        // authentication; `updateProtected` is the way.
        guard stored.protection == .none else { return KeychainStatus.interactionNotAllowed }
        items[key] = Stored(data: data, accessibility: accessibility)
        return KeychainStatus.success
    }

    mutating func delete(_ item: KeychainItem) -> Int32 {
        calls.append(.delete(item))
        if let refusal = refusal(item, writing: true) { return refusal }
        let found = matches(item)
        guard !found.isEmpty else { return KeychainStatus.itemNotFound }
        guard found.allSatisfy({ items[$0].map { readable($0.accessibility) } ?? true }) else {
            return KeychainStatus.interactionNotAllowed
        }
        for key in found { items[key] = nil }
        return KeychainStatus.success
    }
}

extension SimulatedKeychain: CustomReflectable {
    /// The device's state and the calls so far, never an item's data, so `dump` and
    /// reflection-based printers stay safe.
    public var customMirror: Mirror {
        Mirror(self, children: ["device": device, "calls": receivedCalls], displayStyle: .class)
    }
}
