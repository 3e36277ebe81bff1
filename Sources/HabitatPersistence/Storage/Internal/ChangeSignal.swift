// "This store changed", said by its writers to its followers, by the store's name.
//
// On Apple platforms a Darwin notification (`notify_post` / `notify_register_dispatch`): it
// reaches every process of the device listening on the name, so an app hears what its widget or
// share extension wrote to their shared container (and the other way round) without polling.
// Elsewhere the listeners of this process only: Linux has no such bus, and a file store's inotify
// watch already hears other processes there.

import Dispatch
import Habitat
#if canImport(Darwin)
import notify
#endif

struct ChangeSignal: Sendable {
    /// The name every process derives from the store's identity.
    let name: String

    /// The signal of the store that `identity` names (a file's path; a defaults prefix): the same
    /// in every process that opens that store.
    init(store identity: String) {
        // NB: FNV-1a, not `Hasher`, which is seeded per process: every process must derive the
        // same name. A fixed length, whatever the path.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in identity.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        name = "org.habitat.store." + String(hash, radix: 16)
    }

    /// Tells every listener, asynchronously; never blocks the writer.
    func post() {
        #if canImport(Darwin)
        notify_post(name)
        #else
        let listeners = Self.listeners.withLock { Array($0.byName[name, default: [:]].values) }
        for listener in listeners { DispatchQueue.global(qos: .utility).async(execute: listener) }
        #endif
    }

    /// Calls `onSignal` on a utility queue at each post, until the observation stops; `nil` when
    /// the system refuses a registration.
    func observe(_ onSignal: @escaping @Sendable () -> Void) -> StoreObservation? {
        #if canImport(Darwin)
        var token: Int32 = 0
        let status = notify_register_dispatch(name, &token, .global(qos: .utility)) { _ in onSignal() }
        guard status == NOTIFY_STATUS_OK else { return nil }
        return StoreObservation { [token] in notify_cancel(token) }
        #else
        let name = name
        let id = Self.listeners.withLock { listeners in
            defer { listeners.nextID += 1 }
            listeners.byName[name, default: [:]][listeners.nextID] = onSignal
            return listeners.nextID
        }
        return StoreObservation { Self.listeners.withLock { _ = $0.byName[name]?.removeValue(forKey: id) } }
        #endif
    }

    #if !canImport(Darwin)
    /// This process's listeners, by signal name, each under a number of its own.
    private static let listeners = LockedBox<(nextID: Int, byName: [String: [Int: @Sendable () -> Void]])>((0, [:]))
    #endif
}
