/// The session refreshes in flight in this process: one per stack (or scope) and token, so that
/// concurrent ``EnvironmentStack/refreshSession(isolation:fileID:line:using:)`` calls for one session share
/// one call to the server.
///
/// The first caller leads: it runs its refresh closure, applies the answer to its stack (which
/// saves it, when autosave is on) and only then hands the answer to the callers that joined
/// meanwhile. Each of those applies the same answer to its own view of the stack.
// Safe: the flights are reached only through their box, with the lock held (the box can't say
// `Sendable`: it holds `Flight` objects, mutable, each touched only there too).
final class RefreshFlights: @unchecked Sendable {
    static let shared = RefreshFlights()

    /// A stack state (the global stack's, or a scope's) and the token being refreshed, for an
    /// app whose user type is `User`. Keys of two `User` types are never equal as `AnyHashable`s.
    struct Key<User: Sendable>: Hashable {
        var state: ObjectIdentifier
        var token: String
    }

    /// What a caller that joins gets: the lead, the leader's answer, or word that the session
    /// had already changed when the leader looked again (ask again).
    enum Joined<User: Sendable>: Sendable {
        case lead
        case answer(Result<SessionRefresh<User>, any Error>)
        case stale
    }

    /// The callers waiting for one flight's answer.
    final class Flight<User: Sendable> {
        var waiters: [CheckedContinuation<Joined<User>, Never>] = []
    }

    /// Each value is the `Flight<User>` of its `Key<User>`: the casts below can't fail.
    private let flights = LockedBox<[AnyHashable: AnyObject]>([:])

    /// Leads the flight for `key` when none is in the air, or waits for its answer.
    func join<User: Sendable>(
        _ key: Key<User>,
        isolation: isolated (any Actor)? = #isolation
    ) async -> Joined<User> {
        await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Joined<User>, Never>) in
            flights.withLock { flights in
                if let flight = flights[key] {
                    (flight as! Flight<User>).waiters.append(continuation)
                } else {
                    flights[key] = Flight<User>()
                    continuation.resume(returning: .lead)
                }
            }
        }
    }

    /// Ends the flight for `key` and hands `answer` (`nil`: stale) to every caller that joined it.
    func land<User: Sendable>(_ key: Key<User>, with answer: Result<SessionRefresh<User>, any Error>?) {
        let waiters = flights.withLock { flights in
            flights.removeValue(forKey: key).map { ($0 as! Flight<User>).waiters } ?? []
        }
        for waiter in waiters {
            waiter.resume(returning: answer.map { .answer($0) } ?? .stale)
        }
    }

    /// How many callers wait for the refresh of `token` on any stack, or `nil` when none is in
    /// the air (for tests).
    func waiterCount<User: Sendable>(token: String, as _: User.Type) -> Int? {
        flights.withLock { flights in
            let waiting = flights.compactMap { key, flight in
                (key.base as? Key<User>)?.token == token ? (flight as? Flight<User>)?.waiters.count : nil
            }
            return waiting.isEmpty ? nil : waiting.reduce(0, +)
        }
    }
}
