// Stands in for the Facebook SDK's `AccessToken` (FBSDKCoreKit).
public final class AccessToken {
    public nonisolated(unsafe) static var current: AccessToken?
    public let tokenString: String
    public init(tokenString: String) { self.tokenString = tokenString }
}
public final class Profile {}
