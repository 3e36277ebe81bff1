import Foundation

/// Where password hashes run: on threads of their own, at most `width` at a time, with at most
/// `queueLimit` more waiting. A hash is CPU work of tens of milliseconds: run on the
/// cooperative pool it would hold the threads every other request needs (8 clients signing in
/// took `GET /me` from 1.6 ms to 7.9 ms median, 1.5 s max, on 2 cores). Past the queue, a
/// sign-in is refused at once (the route answers 503 with `Retry-After`) instead of waiting.
// Safe: `running` and `waiting` are read and written only with `lock` held. NB: NSLock, which
// the thread sanitizer sees (see MemberDirectory).
public final class HashingPool: @unchecked Sendable {
    /// How many hashes run at once.
    public let width: Int
    /// How many more may wait for a turn.
    public let queueLimit: Int
    private let lock = NSLock()
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private let queue = DispatchQueue(label: "habitat.example.hashing", attributes: .concurrent)

    /// - Parameters:
    ///   - width: Hashes at once; by default one fewer than the cores (at least one), so a core
    ///     is left for every other request.
    ///   - queueLimit: Hashes that may wait; by default four per running one.
    public init(width: Int = max(1, ProcessInfo.processInfo.activeProcessorCount - 1), queueLimit: Int? = nil) {
        self.width = width
        self.queueLimit = queueLimit ?? 4 * width
    }

    /// Runs `work` on a hashing thread when a turn comes; `nil`, at once, when the queue is full.
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        let admission: Admission = lock.withLock {
            if running < width {
                running += 1
                return .now
            }
            return waiting.count < queueLimit ? .wait : .busy
        }
        switch admission {
        case .busy: return nil
        case .wait:
            await withCheckedContinuation { continuation in
                let admitted = lock.withLock {
                    // A turn may have come since the check.
                    if running < width {
                        running += 1
                        return true
                    }
                    waiting.append(continuation)
                    return false
                }
                if admitted { continuation.resume() }
            }
        case .now: break
        }
        defer { leave() }
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    private enum Admission { case now, wait, busy }

    /// Ends a turn: the next waiter takes it, or it is free.
    private func leave() {
        let next: CheckedContinuation<Void, Never>? = lock.withLock {
            guard !waiting.isEmpty else {
                running -= 1
                return nil
            }
            return waiting.removeFirst()
        }
        next?.resume()
    }
}
