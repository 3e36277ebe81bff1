// The models are `ObservableObject`s, so the app runs from iOS 16 / macOS 13 (`@Observable` needs
// iOS 17 / macOS 14). Combine exists only on Apple platforms; this module's logic is tested on
// Linux too, where nothing observes the models: there, the two names Combine would give are
// plain stand-ins.

// NB: each model's file imports Combine where it exists.
#if !canImport(Combine)
/// Combine's `ObservableObject`, where Combine doesn't exist.
public protocol ObservableObject: AnyObject {}

/// Combine's `@Published`, where Combine doesn't exist: it stores its value.
@propertyWrapper
public struct Published<Value> {
    public var wrappedValue: Value

    public init(wrappedValue: Value) {
        self.wrappedValue = wrappedValue
    }
}
#endif
