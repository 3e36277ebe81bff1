// Stands in for the names SwiftUI declares that an app file importing Habitat uses too.
// SwiftUI exists only on Apple platforms; these declarations have its shapes.

@propertyWrapper
public struct Environment<Value> {
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) {}
    public var wrappedValue: Value { fatalError("a stand-in, never read") }
}

public struct EnvironmentValues {
    public var dismiss: DismissAction { DismissAction() }
}

public struct DismissAction {
    public func callAsFunction() {}
}

public protocol View {}
public struct State {}
public struct Binding {}
