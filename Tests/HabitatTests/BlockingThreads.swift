// Where the tests that block run: the ones that wait for a child process, read its pipe or
// sleep between kills.
//
// NB: Swift's cooperative pool has as many threads as the machine has cores (two in CI). A
// synchronous test that blocks holds one of them for seconds, and two such tests at once stop
// every asynchronous test in the suite: in one CI run, observation tests waited 36-108 s for a
// thread. Running every blocking wait on a thread of its own instead started all the process
// tests at once, and the suite under the thread sanitizer took 200-290 s instead of 130 s.
// These two threads are the middle way: the blocking tests take turns on them, two at a time,
// as before, and the pool stays free for the rest.

import Foundation

/// Two threads of their own, as a task executor, for the tests that block.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
// Safe: `jobs` is read and written only with `condition` locked; the rest is immutable.
final class BlockingThreads: TaskExecutor, @unchecked Sendable {
    static let shared = BlockingThreads(threads: 2)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init(threads: Int) {
        for index in 0..<threads {
            let thread = Thread { [self] in runJobs() }
            thread.name = "blocking tests \(index + 1)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func runJobs() -> Never {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs `body`, which keeps a thread busy for long stretches (the session explorer's runs), on
/// ``BlockingThreads``, so that the cooperative pool stays free for the suite's other tests:
/// under the thread sanitizer, the explorer on the pool starved tests waiting two minutes for an
/// observation. Suspended, `body` resumes on those threads too.
func onBlockingThreads<R>(_ body: () async throws -> R) async throws -> R {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return try await body() }
    return try await withTaskExecutorPreference(BlockingThreads.shared) { try await body() }
}

/// Runs `body`, which blocks, on ``BlockingThreads``: waiting, if both are busy, for one of them.
///
/// The test's task stays the same (only its executor changes), so `#expect` and `#require`
/// inside `body` report to the test as usual. Where task executors don't exist (Apple systems
/// before 2024's), `body` blocks the pool's thread, as these tests did before.
func offThePool<R>(_ body: () throws -> R) async throws -> R {
    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return try body() }
    return try await withTaskExecutorPreference(BlockingThreads.shared) { try body() }
}
