import Foundation
@testable import Habitat
@testable import HabitatPersistence
import Testing

/// The machine against a small reference model, on 10,000 seeded random sequences of every
/// event it handles: after each event, the same accounts in the same order, the same outcome,
/// the change it publishes and whether it asks for a save. A few hundred of the sequences run
/// through a real stack too, and its change stream must carry exactly the model's changes.
@Suite struct SessionMachinePropertyTests {
    struct Config: Codable, Sendable, Equatable, DefaultConfig {
        var version = 0
    }

    enum App: EnvironmentSchema {
        typealias Services = MemberServices
        typealias User = Member
        typealias Config = SessionMachinePropertyTests.Config
    }

    typealias Machine = SessionMachine<App>
    typealias Session = UserSession<Member>

    /// The reference: what each event does, written plainly from the table's prose.
    struct Model {
        var active: Session?
        var others: [Session] = []
        var config = Config()

        enum Result: Equatable {
            case publishes(EnvironmentChangeKind, saves: Bool)
            case unchanged, superseded, refused
        }

        static func unique(_ active: Session?, _ others: [Session]) -> [Session] {
            var names = active.map { [$0.user.id] } ?? []
            var kept: [Session] = []
            for other in others where !names.contains(other.user.id) {
                names.append(other.user.id)
                kept.append(other)
            }
            return kept
        }

        mutating func take(_ active: Session?, _ others: [Session]) {
            self.active = active
            self.others = Self.unique(active, others)
        }

        var all: [Session] { (active.map { [$0] } ?? []) + others }

        mutating func apply(_ event: Machine.Event, _ name: String, _ newName: String, _ version: Int) -> Result {
            switch event {
            case .login(let user, let token):
                others.removeAll { $0.user.id == user.id }
                active = Session(user: user, token: token)
                return .publishes(.login, saves: true)
            case .addAccount(let user, let token):
                others.removeAll { $0.user.id == user.id }
                if let current = active, current.user.id != user.id { others.append(current) }
                active = Session(user: user, token: token)
                return .publishes(.login, saves: true)
            case .switchAccount:
                if let index = others.firstIndex(where: { $0.user.id == name }) {
                    let target = others[index]
                    if let current = active { others[index] = current } else { others.remove(at: index) }
                    active = target
                    return .publishes(.accountSwitched, saves: true)
                }
                return active?.user.id == name ? .unchanged : .refused
            case .logout:
                guard active != nil else { return .unchanged }
                active = nil
                return .publishes(.logout, saves: true)
            case .logoutAccount:
                if active?.user.id == name {
                    active = nil
                    return .publishes(.logout, saves: true)
                } else if let index = others.firstIndex(where: { $0.user.id == name }) {
                    others.remove(at: index)
                    return .publishes(.accountSignedOut, saves: true)
                }
                return .unchanged
            case .logoutAll:
                guard active != nil || !others.isEmpty else { return .unchanged }
                let kind: EnvironmentChangeKind = active == nil ? .accountSignedOut : .logout
                take(nil, [])
                return .publishes(kind, saves: true)
            case .updateUser:
                guard active != nil else { return .refused }
                active?.user.name = newName
                return .publishes(.userUpdated, saves: true)
            case .updateConfig:
                config.version = version
                return .publishes(.configUpdated, saves: true)
            case .restored(let accounts, let stored):
                config = stored
                take(accounts.activeSession, accounts.otherSessions)
                return .publishes(.restore, saves: false)
            case .tokenReadable(let stored, let storedOthers):
                guard all.contains(where: { $0.state == .awaitingToken }) else { return .unchanged }
                take(stored, storedOthers)
                return .publishes(stored == nil ? .logout : .restore, saves: true)
            case .refreshed(let old, let new, let user):
                if let current = active, current.token == old {
                    guard current.state != .awaitingToken, current.token != new || current.state != .authenticated else {
                        return all.contains { $0.token == new } ? .unchanged : .superseded
                    }
                    take(Session(user: user ?? current.user, token: new), others)
                    return .publishes(.refresh, saves: true)
                }
                if let index = others.firstIndex(where: { $0.token == old }), others[index].state != .awaitingToken,
                   others[index].token != new || others[index].state != .authenticated {
                    others[index] = Session(user: user ?? others[index].user, token: new)
                    others = Self.unique(active, others)
                    return .publishes(.refresh, saves: true)
                }
                return all.contains { $0.token == new } ? .unchanged : .superseded
            case .refreshEnded(let old):
                if active?.token == old {
                    active = nil
                    return .publishes(.logout, saves: true)
                } else if let index = others.firstIndex(where: { $0.token == old }) {
                    others.remove(at: index)
                    return .publishes(.accountSignedOut, saves: true)
                }
                return active == nil ? .unchanged : .superseded
            case .storeChanged(let stored, let storedOthers, let replacing):
                guard active?.token.secret == replacing else { return .superseded }
                let theirs = (stored.map { [$0] } ?? []) + storedOthers
                if (active == nil) == (stored == nil), all.map(\.token) == theirs.map(\.token), all.map(\.user.id) == theirs.map(\.user.id) {
                    return .unchanged
                }
                take(stored, storedOthers)
                return .publishes(.storeChanged, saves: false)
            case .followed(let shown, let storedOthers, let newConfig, let cause):
                let kind: EnvironmentChangeKind
                if active != nil, shown == nil {
                    kind = .logout
                } else if let new = shown, active == nil || !all.contains(where: { $0.user.id == new.user.id }) {
                    kind = .login
                } else if let old = active, let new = shown, old.user.id != new.user.id {
                    kind = cause == .login ? .login : .accountSwitched
                } else if let old = active, let new = shown, old.state == .awaitingToken, new.state != .awaitingToken {
                    kind = .restore
                } else if let old = active, let new = shown, old.token != new.token {
                    kind = .refresh
                } else if storedOthers.count < others.count {
                    kind = .accountSignedOut
                } else {
                    kind = [.userUpdated, .configUpdated].contains(cause) ? cause : .storeChanged
                }
                take(shown, storedOthers)
                config = newConfig
                return .publishes(kind, saves: false)
            }
        }
    }

    /// One random event, with the name, new user name and config version the model needs.
    struct Step {
        var event: Machine.Event
        var name = ""
        var newName = ""
        var version = 0
    }

    static let members = [Member.ada, .grace, .alan, Member(id: "007", name: "Bond"), Member(id: "7", name: "Seven")]

    static func randomStep(_ model: Model, _ random: inout SplitMix, serial: inout Int) -> Step {
        func member() -> Member { members.randomElement(using: &random)! }
        func token(_ member: Member) -> AuthToken {
            serial += 1
            return AuthToken("\(member.id)#\(serial)")
        }
        func session() -> Session {
            let member = member()
            let state = [AuthState.authenticated, .restored, .awaitingToken].randomElement(using: &random)!
            return Session(user: member, token: state == .awaitingToken ? AuthToken("") : token(member), state: state)
        }
        func sessions() -> [Session] { (0..<Int.random(in: 0...3, using: &random)).map { _ in session() } }
        // A token the stack holds now, or one it held once, or one it never held.
        func heldToken() -> AuthToken {
            let held = model.all.map(\.token)
            if !held.isEmpty, Bool.random(using: &random) { return held.randomElement(using: &random)! }
            return AuthToken("\(member().id)#\(Int.random(in: 0...serial, using: &random))")
        }
        let name = [member().id, "+7", "07", "nobody"].randomElement(using: &random)!
        switch Int.random(in: 0..<14, using: &random) {
        case 0: let user = member(); return Step(event: .login(user, token(user)))
        case 1: let user = member(); return Step(event: .addAccount(user, token(user)))
        case 2: return Step(event: .switchAccount(name), name: name)
        case 3: return Step(event: .logout)
        case 4: return Step(event: .logoutAccount(name), name: name)
        case 5: return Step(event: .logoutAll)
        case 6:
            let newName = "name-\(serial)"
            return Step(event: .updateUser { $0.name = newName }, newName: newName)
        case 7:
            let version = Int.random(in: 0...1_000, using: &random)
            return Step(event: .updateConfig { $0.version = version }, version: version)
        case 8:
            // NB: the fields set directly, duplicates and all, as a damaged file could hold them:
            // the machine must keep one session per account itself.
            var accounts = StoredAccounts<App>(active: nil)
            accounts.activeSession = Bool.random(using: &random) ? session() : nil
            accounts.otherSessions = sessions()
            let config = Config(version: Int.random(in: 0...9, using: &random))
            return Step(event: .restored(accounts, config: config))
        case 9: return Step(event: .tokenReadable(Bool.random(using: &random) ? session() : nil, others: sessions()))
        case 10:
            let user: Member? = Bool.random(using: &random) ? nil : member()
            let old = heldToken()
            let new = Bool.random(using: &random) ? heldToken() : token(user ?? member())
            return Step(event: .refreshed(from: old, to: new, user: user))
        case 11: return Step(event: .refreshEnded(from: heldToken()))
        case 12:
            // What a window's stack takes: often the accounts it holds, reordered or not.
            let shown: Session? = Bool.random(using: &random) ? model.active : (Bool.random(using: &random) ? session() : nil)
            let others = Bool.random(using: &random) ? model.others : sessions()
            let config = Config(version: Int.random(in: 0...9, using: &random))
            let cause: EnvironmentChangeKind = [.login, .logout, .userUpdated, .configUpdated, .refresh].randomElement(using: &random)!
            return Step(event: .followed(shown, others: others, config: config, cause: cause))
        default:
            let replacing = Bool.random(using: &random) ? model.active?.token.secret : heldToken().secret
            return Step(event: .storeChanged(Bool.random(using: &random) ? session() : nil, others: sessions(), replacing: replacing))
        }
    }

    static func expected(_ outcome: Machine.Outcome, _ kind: EnvironmentChangeKind, _ event: Machine.Event) -> Model.Result {
        switch outcome {
        case .applied: .publishes(kind, saves: Machine.row(event).saves)
        case .unchanged: .unchanged
        case .superseded: .superseded
        case .refused: .refused
        }
    }

    @Test func tenThousandSequencesAgreeWithTheModel() {
        var steps = 0
        for seed in 0..<10_000 {
            var random = SplitMix(seed: UInt64(seed))
            var model = Model()
            var environment = HabitatEnvironment<App>(services: MemberServices())
            var serial = 0
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                let step = Self.randomStep(model, &random, serial: &serial)
                let wanted = model.apply(step.event, step.name, step.newName, step.version)
                let kind = Machine.publishes(step.event, in: environment)
                let outcome = Machine.transition(step.event, &environment)
                steps += 1
                let agrees = Self.expected(outcome, kind, step.event) == wanted
                    && environment.session == model.active && environment.otherAccounts == model.others
                    && environment.config == model.config
                    && environment.services.token == environment.session?.token
                guard agrees else {
                    Issue.record("seed \(seed), step \(steps): \(step.event) -> \(outcome), model \(wanted)\n\(environment.accounts)\n\(model.all)")
                    return
                }
                let names = environment.accounts.map(\.user.id)
                #expect(Set(names).count == names.count, "one session per account (seed \(seed))")
            }
        }
        #expect(steps > 150_000)
    }

    @Test func aStackPublishesExactlyTheModelsChanges() async {
        for seed in 0..<300 {
            var random = SplitMix(seed: UInt64(seed) &+ 1_000_000)
            var model = Model()
            let stack = EnvironmentStack<App>(HabitatEnvironment(services: MemberServices()))
            let changes = stack.changes
            var published: [EnvironmentChangeKind] = []
            var serial = 0
            for _ in 0..<Int.random(in: 1...30, using: &random) {
                let step = Self.randomStep(model, &random, serial: &serial)
                if case .publishes(let kind, _) = model.apply(step.event, step.name, step.newName, step.version) {
                    published.append(kind)
                }
                stack.run(step.event, fileID: #fileID, line: #line)
                #expect(stack.current.session == model.active && stack.current.otherAccounts == model.others, "seed \(seed)")
            }
            stack.updateConfig { $0.version = -1 }
            var seen: [EnvironmentChangeKind] = []
            for await change in changes {
                if change.new.config.version == -1, change.kind == .configUpdated { break }
                seen.append(change.kind)
            }
            #expect(seen == published, "seed \(seed)")
        }
    }
}
