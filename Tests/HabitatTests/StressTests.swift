import Foundation
import Habitat
import HabitatPersistence
import Testing

@Suite struct StressTests {
    struct Tally: Sendable {
        var pushes = 0
        var pops = 0
        var logins = 0
        var logouts = 0
        var reads = 0
        var scopes = 0
        var noOps = 0  // pops of the base and logouts while logged out: refused, not counted as writes
        var writes: Int { pushes + pops + logins + logouts }

        static func + (a: Tally, b: Tally) -> Tally {
            Tally(
                pushes: a.pushes + b.pushes, pops: a.pops + b.pops, logins: a.logins + b.logins,
                logouts: a.logouts + b.logouts, reads: a.reads + b.reads, scopes: a.scopes + b.scopes,
                noOps: a.noOps + b.noOps
            )
        }
    }

    /// 8 tasks, 100,000 mixed operations on one stack, then the invariants.
    @Test func concurrentMixedOperationsKeepTheInvariants() async throws {
        let tasks = 8
        let operationsPerTask = 12_500
        let stack = makeStack("base")
        let changes = stack.changes

        let total = await withTaskGroup(of: Tally.self) { group in
            for seed in 0..<tasks {
                group.addTask {
                    var generator = SplitMix(seed: UInt64(seed))
                    var tally = Tally()
                    for step in 0..<operationsPerTask {
                        switch generator.next() % 10 {
                        case 0, 1:
                            stack.push { $0.services.label = "task \(seed) step \(step)" }
                            tally.pushes += 1
                        case 2, 3:
                            if let popped = stack.pop() {
                                precondition(popped.services.label != "base", "popped the base")
                                tally.pops += 1
                            } else {
                                tally.noOps += 1
                            }
                        case 4:
                            stack.login(user: TestUser(id: seed, name: "\(step)"), token: AuthToken("\(step)"))
                            tally.logins += 1
                        case 5:
                            if stack.logout() != nil { tally.logouts += 1 } else { tally.noOps += 1 }
                        case 6:
                            // A scoped override: its writes stay inside it.
                            stack.withEnvironment({ $0.config.timeout = -seed }) {
                                stack.push { $0.config.timeout -= 1 }
                                precondition(stack.current.config.timeout == -seed - 1)
                                precondition(stack.depth == 2)
                            }
                            tally.scopes += 1
                        default:
                            let env = stack.current
                            precondition(env.config.timeout == 30, "a scoped write leaked")
                            precondition(env.session.map { $0.services(in: env) } ?? true)
                            tally.reads += 1
                        }
                    }
                    return tally
                }
            }
            return await group.reduce(Tally(), +)
        }

        #expect(total.pushes + total.pops + total.logins + total.logouts + total.reads + total.scopes + total.noOps == 100_000)
        #expect(stack.depth == 1 + total.pushes - total.pops)
        while stack.pop() != nil {}
        #expect(stack.current.services.label == "base")

        let drained = total.writes
        let observed = await collect(drained, from: changes)
        #expect(observed.count == drained)
        #expect(observed.map(\.sequence) == Array(1...UInt64(drained)), "every change once, in order")
        #expect(observed.filter { $0.kind == .push }.count == total.pushes)
        #expect(observed.filter { $0.kind == .login }.count == total.logins)
        #expect(observed.filter { $0.kind == .logout }.count == total.logouts)
        #expect(observed.allSatisfy { $0.depth >= 1 })
        // Each change's `new` is the next change's `old`: nothing happened in between.
        for (before, after) in zip(observed, observed.dropFirst()) {
            #expect(before.new.services.label == after.old.services.label)
            #expect(before.new.currentUser == after.old.currentUser)
        }
    }
}

extension UserSession where User == TestUser {
    /// A login and its services' token change are one step: a reader never sees one without the other.
    fileprivate func services(in env: TestEnvironment) -> Bool {
        env.services.authorization == "Bearer \(token.secret)"
    }
}

/// A small deterministic generator, so a failure can be replayed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
