// A feature module, as an app's feature package would be: it knows Habitat and its own needs,
// nothing of the app, and reads through the slice the app hands it.

public import Habitat

/// What the feature needs from the app's environment.
public struct FeatureNeeds: Sendable {
    public var timeout: Int
    public var endpoint: String
    public init(timeout: Int, endpoint: String) {
        self.timeout = timeout
        self.endpoint = endpoint
    }
}

/// The feature's read: one field of its services, in the calling task's environment.
public func featureTimeout(_ environment: EnvironmentSlice<FeatureNeeds>) -> Int {
    environment.services.timeout
}
