// Stands in for Alamofire's top-level names that meet an app's session code.
public final class Session: Sendable {
    public static let `default` = Session()
}
public struct AFError: Error {}
