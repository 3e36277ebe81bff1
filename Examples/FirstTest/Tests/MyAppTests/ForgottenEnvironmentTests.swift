import Testing
@testable import MyApp

/// The README's first test with its environment removed: the read gets the stack's `test:`
/// services (`failing`), never the live ones, and the test is told, in one issue naming it.
/// (`withKnownIssue` fails this test if no issue is recorded, or one that doesn't match.)
@Test func aTestThatInstallsNoEnvironmentNeverReachesTheLiveServices() async throws {
    await withKnownIssue("expected, not a failure: the point of this test is the report") {
        await #expect(throws: NoTestServices.self, "the failing services answered, not live's \"Member 1\"") {
            try await greeting(for: 1)
        }
    } matching: { issue in
        let report = issue.comments.map(\.rawValue).joined(separator: " ")
        return report.contains("aTestThatInstallsNoEnvironmentNeverReachesTheLiveServices")
            && report.contains("it got the stack's test environment (`test:`), never the live one")
    }
}
