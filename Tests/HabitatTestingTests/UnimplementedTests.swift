import Foundation
import Habitat
import HabitatTesting
import Testing

@Suite struct UnimplementedTests {
    let api = APIClient.unimplemented

    /// The one test here that lets the failure reach Swift Testing, to show it is recorded
    /// there: the rest capture what is reported, so a run prints no known issues for them.
    @Test func anAsyncThrowingEndpointRecordsAFailureNamingItAndThrows() async {
        await withKnownIssue("expected, not a failure: the point of this test is that an unimplemented endpoint fails the test calling it") {
            _ = try? await api.fetchUser(1)
        } matching: { issue in
            // Reported at the test's own line, naming where the stub was made.
            issue.comments.contains { $0.rawValue.hasPrefix("APIClient.fetchUser is unimplemented (stubbed at HabitatTestingTests/Fixtures.swift:") }
                && issue.sourceLocation?.fileID == "HabitatTestingTests/UnimplementedTests.swift" && issue.sourceLocation?.line == 11
        }
        let failures = await CapturedTestFailures.capture {
            await #expect(throws: UnimplementedError(endpoint: "APIClient.fetchUser")) {
                try await api.fetchUser(1)
            }
        }
        #expect(failures.map(withoutStubLocation) == ["APIClient.fetchUser is unimplemented"])
    }

    @Test func aSyncThrowingEndpointRecordsAndThrows() {
        let failures = CapturedTestFailures.capture {
            #expect(throws: UnimplementedError(endpoint: "APIClient.fetchUserSync")) { try api.fetchUserSync(2) }
        }
        #expect(failures.map(withoutStubLocation) == ["APIClient.fetchUserSync is unimplemented"])
    }

    @Test func nonThrowingEndpointsRecordAndReturnThePlaceholder() async {
        let failures = await CapturedTestFailures.capture {
            #expect(await api.ping() == false)
            #expect(api.count() == -1)
            api.track("tapped")
            await api.trackAsync("viewed", 3)
        }
        #expect(failures.map(withoutStubLocation) == [
            "APIClient.ping is unimplemented", "APIClient.count is unimplemented",
            "APIClient.track is unimplemented", "APIClient.trackAsync is unimplemented",
        ])
    }

    @Test func everyCallIsOneFailure() async {
        let failures = CapturedTestFailures.capture {
            _ = api.count()
            _ = api.count()
        }
        #expect(failures.count == 2)
    }

    @Test func overridingAnEndpointReplacesTheFailure() async throws {
        var api = APIClient.unimplemented
        api.fetchUser = { id in User(id: id, name: "Stub") }
        #expect(try await api.fetchUser(7) == User(id: 7, name: "Stub"))
    }

    /// Not a test of its own: what a child process runs for the test below. A detached task
    /// has no current test, so under a name that is not a test runner's, this is an app.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HABITAT_APP_FIXTURE"] == "1"))
    func appFixture() async {
        let endpoint: @Sendable (Int) -> String = unimplementedEndpoint("Probe.endpoint", placeholder: "placeholder")
        let returned = await Task.detached { endpoint(1) }.value
        print("returned \(returned)")
    }

    /// Outside tests (an app's debug run, a preview) an unimplemented endpoint prints a warning
    /// and returns its placeholder. The child is this test bundle under another name (a hard
    /// link), so nothing about the process says "test runner".
    @Test(.enabled(if: isLinux))
    func outsideTestsAnEndpointWarnsAndCarriesOn() async throws {
        let bundle = try #require(Bundle.main.executableURL)
        let app = bundle.deletingLastPathComponent().appendingPathComponent("habitat-app-\(UUID().uuidString)")
        try FileManager.default.linkItem(at: bundle, to: app)
        defer { try? FileManager.default.removeItem(at: app) }
        let process = Process()
        process.executableURL = app
        process.arguments = ["--testing-library", "swift-testing", "--filter", "appFixture"]
        process.environment = ProcessInfo.processInfo.environment.merging(["HABITAT_APP_FIXTURE": "1"]) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // NB: read both pipes before waiting, on two threads, so neither can fill up and block.
        async let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(out == "returned placeholder\n")
        #expect(await err.contains("[Habitat] warning: Probe.endpoint is unimplemented"))
    }

    /// Not a test of its own: the body a child process runs, for the test below.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HABITAT_DETACHED_FIXTURE"] == "1"))
    func detachedFixture() async {
        let endpoint: @Sendable () -> String = unimplementedEndpoint("Detached.endpoint", placeholder: "-")
        _ = await Task.detached { endpoint() }.value
    }

    /// An unimplemented endpoint called from `Task.detached` inside a Swift Testing test has no
    /// current test, and must still fail the run. A child test process runs the fixture above
    /// (the test bundle is an executable on Linux; on Apple platforms `xctest` runs it).
    @Test(.enabled(if: isLinux))
    func anEndpointCalledFromADetachedTaskFailsTheRun() throws {
        let process = Process()
        process.executableURL = Bundle.main.executableURL ?? Bundle.main.bundleURL.appendingPathComponent("HabitatPackageTests.xctest")
        process.arguments = ["--testing-library", "swift-testing", "--filter", "detachedFixture"]
        process.environment = ProcessInfo.processInfo.environment.merging(["HABITAT_DETACHED_FIXTURE": "1"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0, "the run failed")
        #expect(text.contains("Detached.endpoint is unimplemented"), "\(text)")
    }

    @Test func theErrorSaysWhatIsUnimplemented() {
        #expect(UnimplementedError(endpoint: "A.b").description == "A.b is unimplemented")
    }
}

#if os(Linux)
let isLinux = true
#else
let isLinux = false
#endif

/// A reported message without its "(stubbed at FILE:LINE): ..." tail.
func withoutStubLocation(_ message: String) -> String {
    message.components(separatedBy: " (stubbed at ").first ?? message
}
