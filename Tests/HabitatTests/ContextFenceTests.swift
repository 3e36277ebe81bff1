import Foundation
import HabitatTesting
import HabitatPersistence
import Testing
import XCTest

/// A DI-only app: services and nothing else.
struct GreeterServices: Sendable {
    var greet: @Sendable (String) -> String
}

enum GreeterSchema: EnvironmentSchema {
    typealias Services = GreeterServices
}

/// A schema that adds its user and a configuration with a default in an extension.
enum DefaultedSchema: EnvironmentSchema {
    typealias Services = GreeterServices
}

struct GreeterConfig: Codable, Sendable, DefaultConfig {
    var timeout = 30
}

extension DefaultedSchema {
    typealias User = TestUser
    typealias Config = GreeterConfig
}

/// Counts how many times a live environment was built.
final class BuildCounter: Sendable {
    private let count = LockedBox(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}

let greeterBuilds = BuildCounter()
/// A stack as an app declares it: its live environment described, built only where it is used. Every
/// test below that uses it installs a test environment, so it is never built in a test run.
let greeterEnvironment = EnvironmentStack<GreeterSchema>(live: {
    greeterBuilds.increment()
    return HabitatEnvironment(services: GreeterServices(greet: { "Hello, \($0) (live)" }))
}())

@Suite struct EnvironmentContextTests {
    @Test func theVariableDecides() {
        for context in EnvironmentContext.allCases {
            #expect(EnvironmentContext.detect(environment: ["HABITAT_CONTEXT": context.rawValue], arguments: ["/x/Pkg.xctest"]) == context)
        }
        #expect(EnvironmentContext.detect(environment: ["HABITAT_CONTEXT": "LIVE"], arguments: ["/x/Pkg.xctest"]) == .live)
    }

    @Test func previewsTestRunnersAndTheRest() {
        #expect(EnvironmentContext.detect(environment: ["XCODE_RUNNING_FOR_PREVIEWS": "1"], arguments: ["/x/App"]) == .preview)
        #expect(EnvironmentContext.detect(environment: ["XCTestConfigurationFilePath": "/c"], arguments: ["/x/App"]) == .test)
        #expect(EnvironmentContext.detect(environment: [:], arguments: ["/x/.build/debug/PkgPackageTests.xctest"]) == .test)
        #expect(EnvironmentContext.detect(environment: [:], arguments: ["/usr/bin/swiftpm-testing-helper"]) == .test)
        #expect(EnvironmentContext.detect(environment: [:], arguments: ["/usr/local/bin/my-app"]) == .live)
        #expect(EnvironmentContext.detect(environment: ["HABITAT_CONTEXT": "nonsense"], arguments: ["/usr/local/bin/my-app"]) == .live)
    }

    @Test func thisRunIsATestRun() {
        // CI never sets HABITAT_CONTEXT for the suite.
        #expect(EnvironmentContext.current == .test)
    }

    @Test func aConfigWithADefaultNeedsNoConfigArgument() {
        #expect(HabitatEnvironment<DefaultedSchema>(services: GreeterServices(greet: { $0 })).config.timeout == 30)
        #expect(HabitatEnvironment<DefaultedSchema>.preview(services: GreeterServices(greet: { $0 })).config.timeout == 30)
        #expect(HabitatEnvironment<DefaultedSchema>.test(services: GreeterServices(greet: { $0 })).config.timeout == 30)
    }

    @Test func aSchemaMayNameOnlyItsServices() {
        let environment = HabitatEnvironment<GreeterSchema>(services: GreeterServices(greet: { $0 }))
        #expect(environment.config == NoConfig())
        #expect(environment.session == nil)
    }
}

@Suite(.environment(greeterEnvironment, .test(services: GreeterServices(greet: { "Hi, \($0)" }))))
struct ContextFenceTests {
    @Test func aTestEnvironmentIsReadAndTheLiveEnvironmentIsNeverBuilt() async {
        #expect(greeterEnvironment.current.services.greet("Ada") == "Hi, Ada")
        await withTaskGroup(of: String.self) { group in
            group.addTask { greeterEnvironment.current.services.greet("Grace") }
            for await text in group { #expect(text == "Hi, Grace") }
        }
        #expect(greeterBuilds.value == 0, "no test of this run builds the live environment")
        #expect(greeterEnvironment.liveBaseBuilds == 0)
    }

    @Test func aReadWithoutATestEnvironmentIsReportedOnceNamingTheTestAndTheFix() async {
        let (stack, line) = (EnvironmentStack<GreeterSchema>(live: HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" }))), #line)
        let reports = await CapturedStackReports.shared.collect(stackAt: #fileID, line: UInt(line)) {
            #expect(stack.current.services.greet("Ada") == "live Ada", "the test goes on with the live environment")
            _ = stack.current
        }
        #expect(reports.count == 1, "one report per test, however many reads")
        let message = reports.first
        #expect(message?.contains("test aReadWithoutATestEnvironmentIsReportedOnceNamingTheTestAndTheFix()") == true)
        #expect(message?.contains("reached the live environment") == true)
        #expect(message?.contains("no test environment is installed") == true)
        #expect(message?.contains(".environment(stack, services:") == true)
        #expect(stack.liveBaseBuilds == 1, "built when reached, once")
    }

    /// A stack that names its test environment never gives a test its live environment: a read without a
    /// test environment gets the test environment, and the report says so.
    @Test func aForgottenEnvironmentGetsTheStacksTestEnvironmentNeverTheLiveOne() async {
        let (stack, line) = (EnvironmentStack<GreeterSchema>(
            live: HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" })),
            test: { HabitatEnvironment(services: GreeterServices(greet: { "failing \($0)" })) }
        ), #line - 3)
        let reports = await CapturedStackReports.shared.collect(stackAt: #fileID, line: UInt(line)) {
            #expect(stack.current.services.greet("Ada") == "failing Ada")
            #expect(stack.current.services.greet("Grace") == "failing Grace")
        }
        #expect(stack.liveBaseBuilds == 0, "the live environment is never built")
        #expect(stack.liveEnvironment.services.greet("Ada") == "live Ada", "a test that asks for it still gets it")
        #expect(reports.count == 1)
        #expect(reports.first?.contains("with no test environment installed: it got the stack's test environment (`test:`), never the live one") == true)
    }

    @Test func aServicesOnlyStackNamesItsTestServices() async {
        let (stack, line) = (EnvironmentStack(live: GreeterServices(greet: { "live \($0)" }), test: { GreeterServices(greet: { "failing \($0)" }) }), #line)
        let reports = await CapturedStackReports.shared.collect(stackAt: #fileID, line: UInt(line)) {
            #expect(stack.current.services.greet("Ada") == "failing Ada")
        }
        #expect(stack.liveBaseBuilds == 0)
        #expect(reports.count == 1)
    }

    /// The issue is a report, not an error (Swift Testing would headline an error "Caught
    /// error:", as if the test had thrown): its comment says what happened, then how to fix it.
    @Test func aForgottenEnvironmentIsAnIssueThatSaysWhatHappened() {
        let stack = EnvironmentStack<GreeterSchema>(live: HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" })))
        withKnownIssue("expected, not a failure: the point of this test is the report") {
            _ = stack.current
        } matching: { issue in
            let report = issue.comments.first?.rawValue ?? ""
            return issue.error == nil
                && report.hasPrefix("[Habitat] test aForgottenEnvironmentIsAnIssueThatSaysWhatHappened() reached the live environment of the stack made at ")
                && report.contains("no test environment is installed, and the stack names no test environment (`EnvironmentStack(live:test:)`), so the live environment was built. "
                    + "To fix it, install a test environment with `.environment(stack, services: ...)`")
        }
    }

    @Test func aDetachedReadInsideATestScopeIsAnEscapedScope() async {
        let (stack, line) = (EnvironmentStack<GreeterSchema>(live: HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" }))), #line)
        let reports = await CapturedStackReports.shared.collect(stackAt: #fileID, line: UInt(line)) {
            await stack.withEnvironment(.test(services: GreeterServices(greet: { "test \($0)" }))) {
                #expect(stack.current.services.greet("Ada") == "test Ada")
                let escaped = await Task.detached { stack.current.services.greet("Ada") }.value
                #expect(escaped == "live Ada", "the escaped read reached the base")
            }
        }
        #expect(reports.count == 1)
        #expect(reports.first?.hasPrefix("escaped scope:") == true)
        #expect(reports.first?.contains("aDetachedReadInsideATestScopeIsAnEscapedScope()") == true, "names the open test scope")
    }

    @Test func aTestThatMeansToUseLiveValuesSaysSo() async {
        let (stack, line) = (EnvironmentStack<GreeterSchema>(live: HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" }))), #line)
        let reports = await CapturedStackReports.shared.collect(stackAt: #fileID, line: UInt(line)) {
            stack.withEnvironment(stack.liveEnvironment) {
                #expect(stack.current.services.greet("Ada") == "live Ada")
                stack.push { $0.services.greet = { "pushed \($0)" } }
                #expect(stack.current.services.greet("Ada") == "pushed Ada")
            }
        }
        #expect(reports.isEmpty)
    }

    @Test func aStackMadeFromAValueIsNeverReported() async {
        let (stack, line) = (EnvironmentStack<GreeterSchema>(HabitatEnvironment(services: GreeterServices(greet: { "given \($0)" }))), #line)
        let reports = await CapturedStackReports.shared.collect(stackAt: #fileID, line: UInt(line)) {
            #expect(stack.current.services.greet("Ada") == "given Ada")
            #expect(stack.liveEnvironment.services.greet("Ada") == "given Ada")
        }
        #expect(reports.isEmpty)
    }
}

@Suite struct PreviewEnvironmentTests {
    @Test func aPreviewEnvironmentStandsStillAndMaySignAFixtureUserIn() {
        let signedOut = HabitatEnvironment<TestApp>.preview(services: TestServices(label: "preview"), config: TestConfig())
        #expect(signedOut.now() == Date(timeIntervalSinceReferenceDate: 0))
        #expect(signedOut.now() == signedOut.now())
        #expect(signedOut.session == nil)
        let signedIn = HabitatEnvironment<TestApp>.preview(services: TestServices(), config: TestConfig(timeout: 5), signedInAs: .ada, now: fixedDate)
        #expect(signedIn.currentUser == .ada)
        #expect(signedIn.now() == fixedDate)
        #expect(signedIn.config.timeout == 5)
        #expect(signedIn.services.authorization == "Bearer preview", "session-dependent services are told")
    }
}

@Suite struct ContextOverrideTests {
    /// Not a test of its own: a test that reads a live stack without a test environment, run in a
    /// child process by the test below.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HABITAT_FENCE_WORKER"] != nil))
    func fenceWorker() {
        let stack = EnvironmentStack<GreeterSchema>(live: HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" })))
        print(stack.current.services.greet("Ada"))
    }

    /// Not a test of its own: in the live context, the live environment is built by the first call
    /// that uses the stack, a read or another, and once.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HABITAT_LAZY_WORKER"] != nil))
    func lazyLiveWorker() {
        let builds = LockedBox(0)
        let build = { @Sendable () -> HabitatEnvironment<GreeterSchema> in
            builds.withLock { $0 += 1 }
            return HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" }))
        }
        let read = EnvironmentStack<GreeterSchema>(live: build())
        print("made: \(builds.withLock { $0 })")
        print("read: \(read.current.services.greet("Ada")) \(builds.withLock { $0 })")
        _ = read.current
        print("again: \(builds.withLock { $0 })")
        let pushed = EnvironmentStack<GreeterSchema>(live: build())
        pushed.push { $0.locale = Locale(identifier: "de_DE") }
        print("pushed: \(pushed.depth) \(builds.withLock { $0 }) \(pushed.pop()?.locale.identifier ?? "-") \(pushed.current.services.greet("Grace"))")
    }

    @Test(.enabled(if: canRunFixtures))
    func inTheLiveContextTheLiveEnvironmentIsBuiltByTheFirstUse() async throws {
        try await offThePool {
            let child = fixtureProcess("lazyLiveWorker", environment: ["HABITAT_LAZY_WORKER": "1", "HABITAT_CONTEXT": "live"])
            let output = Pipe()
            child.standardOutput = output
            try child.run()
            child.waitUntilExit()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(child.terminationStatus == 0)
            #expect(printed.contains("made: 0"), "not built when the stack is made: \(printed)")
            #expect(printed.contains("read: live Ada 1"), "built by the first read")
            #expect(printed.contains("again: 1"), "once")
            #expect(printed.contains("pushed: 2 2 de_DE live Grace"), "or by the first call of another kind")
        }
    }

    @Test(.enabled(if: canRunFixtures), arguments: [("live", Int32(0)), ("test", Int32(1))])
    func theVariableTurnsTheCheckOffOrOn(context: String, status: Int32) async throws {
        try await offThePool {
            let child = fixtureProcess("fenceWorker", environment: ["HABITAT_FENCE_WORKER": "1", "HABITAT_CONTEXT": context])
            let output = Pipe()
            child.standardOutput = output
            try child.run()
            child.waitUntilExit()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(child.terminationStatus == status, "HABITAT_CONTEXT=\(context): the read \(status == 0 ? "passes" : "fails the test")")
            #expect(printed.contains("live Ada"), "either way the read returns the live environment")
        }
    }
}

/// The same fence under XCTest: `reportTestFailure` fails the running XCTest test.
final class ContextFenceXCTests: XCTestCase {
    func testAReadWithoutATestEnvironmentIsReportedOnce() async {
        let (stack, line) = (EnvironmentStack<GreeterSchema>(live: HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" }))), #line)
        let reports = await CapturedStackReports.shared.collect(stackAt: #fileID, line: UInt(line)) {
            XCTAssertEqual(stack.current.services.greet("Ada"), "live Ada")
            _ = stack.current
        }
        XCTAssertEqual(reports.count, 1)
        XCTAssertTrue(reports.first?.contains("reached the live environment of the stack made at HabitatTests/ContextFenceTests.swift:") == true)
    }

    func testAStackInATestCaseScopeIsNotReported() async {
        let (stack, line) = (EnvironmentStack<GreeterSchema>(live: HabitatEnvironment(services: GreeterServices(greet: { "live \($0)" }))), #line)
        let reports = await CapturedStackReports.shared.collect(stackAt: #fileID, line: UInt(line)) {
            stack.withEnvironment(.test(services: GreeterServices(greet: { "test \($0)" }))) {
                XCTAssertEqual(stack.current.services.greet("Ada"), "test Ada")
            }
        }
        XCTAssertEqual(reports, [])
        XCTAssertEqual(stack.liveBaseBuilds, 0)
    }
}

/// One copy of Habitat in this test bundle: nothing to report. (Two copies, and the report, are
/// shown by Tests/LinkedTwice, which needs images of its own.)
@Suite struct LoadedCopiesTests {
    @Test func aProcessWithOneCopyHasNoReport() {
        #expect(LoadedCopies.earlier.isEmpty)
        #expect(LoadedCopies.report == nil)
    }
}
