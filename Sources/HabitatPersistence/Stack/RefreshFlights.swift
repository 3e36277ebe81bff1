import Habitat

/// A stack's session refreshes in flight: one per stack state (the global stack's, or a scope's)
/// and token, so that concurrent ``Habitat/EnvironmentStack/refreshSession(account:isolation:fileID:line:using:)``
/// calls for one session share one call to the server. Kept on the stack (its attachments).
///
/// The first caller leads: it runs its refresh closure, applies the answer to its stack (which
/// saves it, when autosave is on) and only then hands the answer to the callers that joined
/// meanwhile. Each of those applies the same answer to its own view of the stack.
final class RefreshFlights<User: Sendable>: Sendable {
    /// A stack state and the token being refreshed.
    struct Key: Hashable {
        var state: ObjectIdentifier
        var token: String
    }

    /// What a caller that joins gets: the lead, the leader's answer, or word that the session
    /// had already changed when the leader looked again (ask again).
    enum Joined: Sendable {
        case lead
        case answer(Result<SessionRefresh<User>, any Error>)
        case stale
    }

    /// The callers waiting for each flight's answer.
    private let flights = LockedBox<[Key: [CheckedContinuation<Joined, Never>]]>([:])

    @usableFromInline
    init() {}

    /// Leads the flight for `key` when none is in the air, or waits for its answer.
    func join(_ key: Key, isolation: isolated (any Actor)? = #isolation) async -> Joined {
        await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Joined, Never>) in
            let leads = flights.withLock { flights in
                guard flights[key] != nil else {
                    flights[key] = []
                    return true
                }
                flights[key]?.append(continuation)
                return false
            }
            if leads { continuation.resume(returning: .lead) }
        }
    }

    /// Ends the flight for `key` and hands `answer` (`nil`: stale) to every caller that joined it.
    func land(_ key: Key, with answer: Result<SessionRefresh<User>, any Error>?) {
        let waiters = flights.withLock { $0.removeValue(forKey: key) ?? [] }
        for waiter in waiters {
            waiter.resume(returning: answer.map { .answer($0) } ?? .stale)
        }
    }

    /// How many callers wait for the refresh of `token` on any state of the stack, or `nil` when
    /// none is in the air (for tests).
    func waiterCount(token: String) -> Int? {
        flights.withLock { flights in
            let waiting = flights.filter { $0.key.token == token }.map(\.value.count)
            return waiting.isEmpty ? nil : waiting.reduce(0, +)
        }
    }
}

extension EnvironmentStack {
    /// The session refreshes in flight on this stack and its scopes.
    var refreshes: RefreshFlights<App.User> {
        attachments.value { RefreshFlights() }
    }
}
