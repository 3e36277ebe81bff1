// Following the store: another process's (or another stack's) login, logout or token rotation
// reaches this stack, and its change stream, without waiting for the next launch.

import Dispatch
public import Habitat

extension EnvironmentStack {
    /// Follows `sessions`: when another process, or another stack on the same store, logs in,
    /// logs out, signs someone else in or rotates the token, this stack takes the stored session
    /// and its `changes` stream (and `ObservableEnvironment`) report it as a
    /// `EnvironmentChangeKind.storeChanged` change.
    ///
    /// An app's widget or share extension, a helper process, a second window's stack: each
    /// follows the store the app saves to, so a logout in one is a logout in all.
    ///
    /// ```swift
    /// let following = appEnvironment.followStore(sessions)
    /// // ... later, or when `following` is released:
    /// following.stop()
    /// ```
    ///
    /// When the store's ``SessionStore/store`` has a change feed
    /// (``KeyValueStore/observeChanges(_:)``: a ``JSONFileStore`` watched by the kernel), the
    /// follower checks the store when it changes, and an idle follower wakes nobody. Otherwise
    /// (the kernel refused the watch, or a store that can't tell) it checks every `interval`.
    /// ``StoreFollower/usesChangeFeed`` says which. A check reads the snapshot's pairs and the
    /// active account's token item, and makes a full load only when they changed. A change
    /// made in this stack is never taken for another's: what this stack saved or restored is
    /// what it compares with. The global stack follows; scopes don't.
    ///
    /// - Parameters:
    ///   - sessions: The store other processes save to.
    ///   - interval: How often to check when the store has no change feed; 250 ms by default,
    ///     at least a millisecond and at most a year.
    /// - Returns: The follower; following stops when it is released or stopped.
    public func followStore(_ sessions: SessionStore<App>, checkingEvery interval: Duration = .milliseconds(250)) -> StoreFollower {
        if autosave.knowledge == nil { autosave.knowledge = try? sessions.storedPair() }
        // NB: checks on a dispatch queue, not a task: each reads a file (or asks the Keychain)
        // and may wait for the store's lock, which must not hold a thread of the cooperative
        // pool, and a pool kept busy by the app must not delay the check. One serial queue, so
        // checks never overlap.
        let queue = DispatchQueue(label: "habitat.follow", qos: .utility)
        let checks = LockedBox(0)
        let check: @Sendable () -> Void = { [weak self] in
            checks.withLock { $0 += 1 }
            self?.takeStoredSessionIfChanged(in: sessions)
        }
        if let feed = sessions.store.observeChanges({ queue.async(execute: check) }) {
            queue.async(execute: check)   // a change between reading the store above and arming the feed
            return StoreFollower(feed: feed, checks: checks)
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        // NB: bounded to a millisecond .. a year: a zero or negative interval spun the queue, and
        // one past `Int`'s nanoseconds (292 years) trapped.
        let nanoseconds = min(max(Double(interval.components.seconds) * 1e9 + Double(interval.components.attoseconds) / 1e9, 1e6), 3.2e16)
        timer.schedule(deadline: .now() + .nanoseconds(Int(nanoseconds)), repeating: .nanoseconds(Int(nanoseconds)))
        timer.setEventHandler(handler: check)
        timer.resume()
        return StoreFollower(timer: timer, checks: checks)
    }

    /// Takes the stored session when the store holds another pair than the one this stack
    /// last saved or restored.
    func takeStoredSessionIfChanged(in sessions: SessionStore<App>) {
        guard let stored = try? sessions.storedPair(), SessionMachine<App>.followerTakes(stored, known: autosave.knowledge) else { return }
        let snapshot: SessionSnapshot<App>?
        do throws(SnapshotError) {
            snapshot = try sessions.load()
        } catch {
            return
        }
        // NB: an active account waiting for its token (a locked device) takes nothing yet;
        // another account waiting (one behind Face ID) is taken as it is, waiting.
        guard SessionMachine<App>.tokenSettled(for: nil, in: snapshot?.accounts) else { return }
        // NB: the knowledge after the stack took the store's accounts, and only then (see
        // `Autosave.save`): a save that reads the knowledge first never finds it newer than
        // the environment it reads next. Superseded by a change made here, the next check, or
        // the next save's merge, takes the store's change.
        if adoptStoredSession(snapshot?.session, others: snapshot?.otherAccounts ?? [], replacing: filledRoot.topEnvironment.session?.token.secret) {
            autosave.knowledge = snapshot?.known ?? stored
        }
    }
}

/// A stack following its session store (see ``Habitat/EnvironmentStack/followStore(_:checkingEvery:)``):
/// following stops when this is released or `stop()` is called.
// Safe: the timer is reached only through its box, with the lock held (a `DispatchSourceTimer`
// doesn't say `Sendable` everywhere, so neither can the box).
public final class StoreFollower: @unchecked Sendable {
    private let timer: LockedBox<(any DispatchSourceTimer)?>
    private let feed: StoreObservation?
    private let checkCount: LockedBox<Int>

    init(timer: (any DispatchSourceTimer)? = nil, feed: StoreObservation? = nil, checks: LockedBox<Int>) {
        self.timer = LockedBox(timer)
        self.feed = feed
        checkCount = checks
    }

    /// Whether the store's change feed tells the follower of changes; `false` when it polls.
    public var usesChangeFeed: Bool { feed != nil }

    /// How many times the follower has checked the store: its wake-ups. With the change feed,
    /// one at the start and one per change (or batch of changes); polling, one per interval.
    public var checks: Int { checkCount.withLock { $0 } }

    /// Stops following.
    public func stop() {
        feed?.stop()
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
    }

    deinit {
        stop()
    }
}
