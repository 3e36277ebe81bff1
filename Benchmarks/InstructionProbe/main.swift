// Runs one operation N times, for `instructions.sh` to count instructions with callgrind.
// Instruction counts are stable where wall-clock times on these machines vary by 30-40%.
//
//     habitat-instruction-probe OPERATION COUNT

import Foundation
import Habitat

struct ProbeUser: Codable, Sendable { var id: Int }
struct ProbeConfig: Codable, Sendable { var timeout = 30; var name = "x" }
struct ProbeServices: Sendable { var api = "live" }
enum ProbeApp: EnvironmentSchema {
    typealias Services = ProbeServices
    typealias User = ProbeUser
    typealias Config = ProbeConfig
}

let stack = EnvironmentStack<ProbeApp>(Environment(services: ProbeServices(), config: ProbeConfig()))
struct Plain { var timeout = 30 }
nonisolated(unsafe) var plain = Plain()

@inline(never) func consume(_ value: Int) { if value == .min { print(value) } }

let operations: [String: (Int) -> Void] = [
    // Both reads hand each value to an opaque function, as the harness's `blackHole` does, so
    // the compiler can't hoist the floor's read out of the loop.
    "read": { count in for _ in 0..<count { consume(stack.current.config.timeout) } },
    "read-floor": { count in for _ in 0..<count { consume(plain.timeout) } },
    "scoped-read": { count in
        stack.withEnvironment({ $0.config.timeout = 2 }) {
            for _ in 0..<count { consume(stack.current.config.timeout) }
        }
    },
    "scope": { count in for index in 0..<count { stack.withEnvironment({ $0.config.timeout = index }) { consume(index) } } },
    "push-pop": { count in for index in 0..<count { stack.push { $0.config.timeout = index }; stack.pop() } },
    "push-pop-floor": { count in
        var frames = [stack.current]
        for index in 0..<count {
            var copy = frames[frames.count - 1]
            copy.config.timeout = index
            frames.append(copy)
            consume(frames.removeLast().config.timeout)
        }
    },
    "push-pop-locked-floor": { count in
        var frames = [stack.current]
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        for index in 0..<count {
            pthread_mutex_lock(mutex)
            var copy = frames[frames.count - 1]
            copy.config.timeout = index
            frames.append(copy)
            pthread_mutex_unlock(mutex)
            pthread_mutex_lock(mutex)
            let popped = frames.removeLast()
            pthread_mutex_unlock(mutex)
            consume(popped.config.timeout)
        }
    },
    "login-logout": { count in
        for _ in 0..<count {
            stack.login(user: ProbeUser(id: 1), token: AccessToken("t"))
            stack.logout()
        }
    },
]

let arguments = CommandLine.arguments
guard arguments.count == 3, let operation = operations[arguments[1]], let count = Int(arguments[2]) else {
    print("usage: habitat-instruction-probe (\(operations.keys.sorted().joined(separator: " | "))) COUNT")
    exit(2)
}
operation(count)
