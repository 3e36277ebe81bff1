import Foundation

/// Work raced against its timeout: the first to finish resumes the caller, and the other is
/// cancelled and not awaited, so a caller never waits past the timeout for work that ignores
/// cancellation (a query on a dropped connection, an upstream that trickles its answer).
// Safe: `continuation`, `work`, `timer` and `isCancelled` are read and written only with `lock` held.
package final class Race<R: Sendable>: @unchecked Sendable {
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

    private let lock = NSLock()
    private var continuation: CheckedContinuation<Result<R, any Error>, Never>?
    private var work: Task<Void, Never>?
    private var timer: Task<Void, Never>?
    private var isCancelled = false

    func start(_ continuation: CheckedContinuation<Result<R, any Error>, Never>, work body: @escaping @Sendable () async throws -> R, timeout: Duration) {
        // A caller cancelled before the race began (the cancellation handler ran first) gets
        // its CancellationError without a query.
        guard !lock.withLock({ self.continuation = continuation; return isCancelled }) else {
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
        let finished = lock.withLock {
            guard self.continuation != nil else { return true }
            (self.work, self.timer) = (work, timer)
            return false
        }
        if finished { timer.cancel() }   // the query answered before the timer was stored
    }

    func cancel() {
        lock.withLock { isCancelled = true }
        finish(.failure(CancellationError()))
    }

    /// Resumes the caller with `outcome` if nothing did yet, and cancels what still runs.
    private func finish(_ outcome: Result<R, any Error>) {
        let (continuation, work, timer) = lock.withLock {
            defer { (self.continuation, self.work, self.timer) = (nil, nil, nil) }
            return (self.continuation, self.work, self.timer)
        }
        work?.cancel()
        timer?.cancel()
        continuation?.resume(returning: outcome)
    }
}
