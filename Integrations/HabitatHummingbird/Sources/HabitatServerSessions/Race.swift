import Foundation

/// Work raced against its timeout: the first to finish resumes the caller, and the other is
/// cancelled and not awaited, so a caller never waits past the timeout for work that ignores
/// cancellation (a query on a dropped connection, an upstream that trickles its answer).
package final class Race<R: Sendable>: Sendable {
    /// The timeout came first.
    package struct TimedOut: Error {}

    /// Runs `body`, and returns its outcome or, after `timeout`, ``TimedOut``; a cancelled
    /// caller gets `CancellationError` at once.
    package static func run(_ body: @escaping @Sendable () async throws -> R, timeout: Duration) async -> Result<R, any Error> {
        let race = Race<R>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                race.start(continuation, work: body, timeout: timeout)
            }
        } onCancel: {
            race.cancel()
        }
    }

    private struct State {
        var continuation: CheckedContinuation<Result<R, any Error>, Never>?
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
        var isCancelled = false
    }

    private let state = LockedBox(State())

    func start(_ continuation: CheckedContinuation<Result<R, any Error>, Never>, work body: @escaping @Sendable () async throws -> R, timeout: Duration) {
        // A caller cancelled before the race began (the cancellation handler ran first) gets
        // its CancellationError without a query.
        guard !state.withLock({ $0.continuation = continuation; return $0.isCancelled }) else {
            finish(.failure(CancellationError()))
            return
        }
        let work = Task {
            do {
                self.finish(.success(try await body()))
            } catch {
                self.finish(.failure(error))
            }
        }
        let timer = Task {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self.finish(.failure(TimedOut()))
        }
        let finished = state.withLock { state in
            guard state.continuation != nil else { return true }
            (state.work, state.timer) = (work, timer)
            return false
        }
        if finished { timer.cancel() }   // the query answered before the timer was stored
    }

    func cancel() {
        state.withLock { $0.isCancelled = true }
        finish(.failure(CancellationError()))
    }

    /// Resumes the caller with `outcome` if nothing did yet, and cancels what still runs.
    private func finish(_ outcome: Result<R, any Error>) {
        let (continuation, work, timer) = state.withLock { state in
            defer { (state.continuation, state.work, state.timer) = (nil, nil, nil) }
            return (state.continuation, state.work, state.timer)
        }
        work?.cancel()
        timer?.cancel()
        continuation?.resume(returning: outcome)
    }
}
