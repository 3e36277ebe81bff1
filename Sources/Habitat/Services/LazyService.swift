import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

/// A live service built when it is first read, exactly once, however many threads read it
/// first at the same moment.
///
/// Wrap the services that are costly to make (an analytics SDK, a database, a machine-learning
/// model) so that a launch, an extension or a preview that never reads them never builds them:
///
/// ```swift
/// struct AppServices: Sendable {
///     var api: APIClient
///     @LazyService var analytics: Analytics
/// }
///
/// extension AppServices {
///     static let live = AppServices(api: .live, analytics: LazyService("analytics") { .sdk() })
/// }
/// ```
///
/// The first read runs the factory; reads at the same time wait for it, and every later read
/// takes the published value without a lock. Copies of the services share one factory, so
/// pushing or scoping a changed environment never builds the service again. Setting the property
/// (a test's or a scope's `$0.services.analytics = .recording`) replaces it with a value that
/// is ready, and its factory never runs.
///
/// A factory that throws, that doesn't finish within `timeout` for the readers waiting on it,
/// or that reads its own service while building it, gives a ``LazyServiceError`` naming the
/// service: ``get()`` throws it; reading the
/// property stops the program with its message, as a missing service can't be worked around.
@propertyWrapper
public struct LazyService<Value: Sendable>: Sendable {
    private let cell: LazyServiceCell<Value>

    /// A service built by `factory` on its first read.
    /// - Parameters:
    ///   - name: The service's name, for its errors; its type's name by default.
    ///   - timeout: How long a reader waits for a factory another thread is running before it
    ///     gets ``LazyServiceError/timedOut(service:after:)``.
    ///   - factory: Builds the service; runs at most once.
    public init(
        _ name: String = "\(Value.self)",
        timeout: Duration = .seconds(10),
        factory: @escaping @Sendable () throws -> Value
    ) {
        cell = LazyServiceCell(name: name, timeout: timeout, factory: factory)
    }

    /// A service built from `wrappedValue` on its first read: what
    /// `@LazyService var analytics = Analytics.sdk()` and the memberwise initialiser's
    /// `analytics: .sdk()` mean.
    public init(wrappedValue: @autoclosure @escaping @Sendable () -> Value) {
        cell = LazyServiceCell(name: "\(Value.self)", timeout: .seconds(10), factory: wrappedValue)
    }


    private init(cell: LazyServiceCell<Value>) { self.cell = cell }

    /// The service, built now if this is its first read.
    ///
    /// Stops the program with the error's message if the factory threw or timed out; use
    /// ``get()`` to handle those.
    public var wrappedValue: Value {
        get {
            do { return try cell.value() } catch { fatalError("[Habitat] \(error.description)") }
        }
        set { self = LazyService(cell: LazyServiceCell(ready: newValue, name: "\(Value.self)")) }
    }

    /// The wrapper itself, for ``get()`` and ``isBuilt``: `services.$analytics.get()`.
    public var projectedValue: LazyService<Value> { self }

    /// The service, built now if this is its first read, or the typed reason it can't be had.
    public func get() throws(LazyServiceError) -> Value { try cell.value() }

    /// Whether the service has been built (or was given ready).
    public var isBuilt: Bool { cell.isPublished }

    /// How many times the factory has started: 0 before the first read, then 1, however many
    /// readers there were. For the package's tests.
    package var factoryRuns: Int { cell.runs }
}

/// Why a ``LazyService`` can't give its service.
public enum LazyServiceError: Error, Equatable, CustomStringConvertible {
    /// The factory threw; every read gives the same error.
    case factoryFailed(service: String, reason: String)
    /// Another reader's factory run didn't finish in time.
    case timedOut(service: String, after: Duration)
    /// The factory read its own service while building it, directly or through other lazy
    /// services: a dependency cycle.
    case cycle(service: String)

    public var description: String {
        switch self {
        case .factoryFailed(let service, let reason):
            return "the factory of the lazy service '\(service)' failed: \(reason)"
        case .timedOut(let service, let after):
            return "the lazy service '\(service)' was not built within \(after): its factory, running on another thread, has not returned"
        case .cycle(let service):
            return "the factory of the lazy service '\(service)' read '\(service)' while building it: a dependency cycle"
        }
    }
}

/// The shared state behind a ``LazyService`` and its copies.
///
/// NB: after publication a read is one atomic load and a read through the published box:
/// no lock, no retain of shared memory. Until then readers meet under `condition`.
// Safe: `state` and `runCount` are only touched with `condition` locked; `published` is an
// atomic word holding a retained `Published` box, written once (nil to the box) under the lock
// and released in `deinit`, so a reader that loads it non-zero reads an immutable object.
final class LazyServiceCell<Value: Sendable>: @unchecked Sendable {
    private final class Published {
        let value: Value
        init(_ value: Value) { self.value = value }
    }
    private enum State {
        case idle(@Sendable () throws -> Value)
        /// Running on the thread named, so a read from that thread is a cycle, not a wait.
        case running(builder: pthread_t)
        case failed(LazyServiceError)
        case ready
    }

    let name: String
    private let timeout: Duration
    private let published = AtomicWord(0)
    private let condition = NSCondition()
    private var state: State
    private var runCount = 0

    init(name: String, timeout: Duration, factory: @escaping @Sendable () throws -> Value) {
        self.name = name
        self.timeout = timeout
        state = .idle(factory)
    }

    init(ready value: Value, name: String) {
        self.name = name
        timeout = .zero
        state = .ready
        publish(value)
    }

    deinit {
        let bits = published.load(ordering: .acquiring)
        if bits != 0, let pointer = UnsafeRawPointer(bitPattern: UInt(bits)) {
            Unmanaged<Published>.fromOpaque(pointer).release()
        }
    }

    var isPublished: Bool { published.load(ordering: .acquiring) != 0 }
    var runs: Int { condition.lock(); defer { condition.unlock() }; return runCount }

    @inline(__always)
    func value() throws(LazyServiceError) -> Value {
        let bits = published.load(ordering: .acquiring)
        if _fastPath(bits != 0), let pointer = UnsafeRawPointer(bitPattern: UInt(bits)) {
            return Unmanaged<Published>.fromOpaque(pointer)._withUnsafeGuaranteedRef { $0.value }
        }
        return try build()
    }

    private func publish(_ value: Value) {
        let pointer = Unmanaged.passRetained(Published(value)).toOpaque()
        published.store(UInt64(UInt(bitPattern: pointer)), ordering: .releasing)
    }

    private func build() throws(LazyServiceError) -> Value {
        condition.lock()
        switch state {
        case .idle(let factory):
            state = .running(builder: pthread_self())
            runCount += 1
            condition.unlock()
            let outcome = Result { try factory() }
            condition.lock()
            switch outcome {
            case .success(let value):
                publish(value)
                state = .ready
            case .failure(let error as LazyServiceError):
                state = .failed(error)   // a cycle, or a service it needs that failed: said as it is
            case .failure(let error):
                state = .failed(.factoryFailed(service: name, reason: "\(error)"))
            }
            condition.broadcast()
            condition.unlock()
            return try value()
        case .running(let builder) where pthread_equal(builder, pthread_self()) != 0:
            condition.unlock()
            throw .cycle(service: name)
        case .running:
            let deadline = Date().addingTimeInterval(timeout.seconds)
            while case .running = state {
                if !condition.wait(until: deadline), case .running = state {
                    condition.unlock()
                    throw .timedOut(service: name, after: timeout)
                }
            }
            condition.unlock()
            return try value()
        case .failed(let error):
            condition.unlock()
            throw error
        case .ready:
            condition.unlock()
            return try value()
        }
    }
}

extension Duration {
    /// The duration in seconds, as `Date` arithmetic takes it.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
