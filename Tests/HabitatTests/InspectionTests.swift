import Foundation
import Habitat
import HabitatPersistence
import Testing

/// The inspectable stack: every frame says how it was made, and `frames`, `print` and `dump`
/// show it.
@Suite struct InspectionTests {
    let file = "HabitatTests/InspectionTests.swift"

    @Test func aPushRecordsItsOperationLabelAndCallSite() throws {
        let stack = makeStack()
        let line: UInt = #line + 1
        stack.push(label: "preview") { $0.locale = Locale(identifier: "de_DE") }
        let frames = stack.frames
        #expect(frames.count == 2)
        #expect(frames[0].origin == FrameOrigin(.push, label: "preview", fileID: "HabitatTests/InspectionTests.swift", line: line))
        #expect(frames[0].origin.fileID == file)
        #expect(frames[0].changedFields == ["locale"])
        #expect(frames[0].description.hasPrefix("2: push \"preview\""), "the frame's position, 1 for the base")
        #expect(frames[1].origin.operation == .base)
        #expect(frames[1].origin.fileID == "HabitatTests/Fixtures.swift", "the base comes from makeStack()")
        #expect(frames[1].changedFields.isEmpty)
        #expect(frames[0].description == "2: push \"preview\" at \(file):\(line), changed locale")
    }

    /// A pop leaves its frame as the spare; the next push refills it with its own origin.
    @Test func anOriginSurvivesPopThenPush() {
        let stack = makeStack()
        stack.push(label: "first") { $0.config.timeout = 1 }
        stack.pop()
        let line: UInt = #line + 1
        stack.push(makeEnvironment("second"), label: "second")
        let top = stack.frames[0]
        #expect(top.origin.label == "second")
        #expect(top.origin.line == line)
        #expect(top.changedFields == ["services"])
    }

    @Test func replacementsLoginsLogoutsAndUpdatesRecordTheirOrigins() throws {
        let stack = makeStack()
        var line: UInt = #line + 1
        stack.replaceCurrent(label: "tuned") { $0.config.timeout = 5 }
        #expect(stack.frames[0].origin == FrameOrigin(.replace, label: "tuned", fileID: "HabitatTests/InspectionTests.swift", line: line))
        #expect(stack.frames.count == 1, "a replacement makes no new frame")

        line = #line + 1
        stack.login(user: .ada, token: AuthToken("s3cr3t"))
        #expect(stack.frames[0].origin == FrameOrigin(.login, fileID: "HabitatTests/InspectionTests.swift", line: line))
        #expect(stack.frames[0].environment.currentUser == .ada)

        line = #line + 1
        try stack.updateCurrentUser { $0.name = "Ada L." }
        #expect(stack.frames[0].origin == FrameOrigin(.userUpdated, fileID: "HabitatTests/InspectionTests.swift", line: line))

        line = #line + 1
        stack.updateConfig { $0.timeout = 9 }
        #expect(stack.frames[0].origin == FrameOrigin(.configUpdated, fileID: "HabitatTests/InspectionTests.swift", line: line))

        line = #line + 1
        stack.logout()
        #expect(stack.frames[0].origin == FrameOrigin(.logout, fileID: "HabitatTests/InspectionTests.swift", line: line))
    }

    @Test func changedFieldsNameWhatDiffersFromTheFrameBelow() {
        let stack = makeStack()
        stack.push(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("t"))))
        #expect(stack.frames[0].changedFields == ["services", "session"], "login hands the services the session too")
        stack.push { $0.timeZone = TimeZone(identifier: "Europe/Berlin")! }
        #expect(stack.frames[0].changedFields == ["timeZone"])
        stack.push { $0.now = { Date.distantPast } }
        #expect(stack.frames[0].changedFields.isEmpty, "closures can't be compared and are never listed")
    }

    @Test func aRestoreAndARefreshRecordTheirOrigins() async throws {
        let sessions = SessionStore<TestApp>.inMemory()
        try sessions.save(makeEnvironment().with(\.session, UserSession(user: .ada, token: AuthToken("old"))))
        let stack = makeStack()
        var line: UInt = #line + 1
        stack.restoreAtLaunch(from: sessions)
        #expect(stack.frames[0].origin == FrameOrigin(.restore, fileID: "HabitatTests/InspectionTests.swift", line: line))

        line = #line + 1
        _ = await stack.refreshSession { _ in .refreshed(token: AuthToken("new")) }
        #expect(stack.frames[0].origin == FrameOrigin(.refresh, fileID: "HabitatTests/InspectionTests.swift", line: line))
    }

    /// A scope's state is pooled and reused by the next scope: its base then carries the new
    /// scope's origin, and nothing of the previous scope's frames.
    @Test func aReusedScopeCarriesItsOwnOrigin() {
        let stack = makeStack()
        let firstLine: UInt = #line + 1
        stack.withEnvironment({ $0.config.timeout = 1 }) {
            stack.push(label: "inside the first scope") { $0.config.timeout = 2 }
            #expect(stack.frames.map(\.origin.operation) == [.push, .scope])
            #expect(stack.frames[1].origin.line == firstLine)
        }
        let secondLine: UInt = #line + 1
        stack.withEnvironment({ $0.config.timeout = 3 }) {
            let frames = stack.frames
            #expect(frames.count == 1)
            #expect(frames[0].origin == FrameOrigin(.scope, fileID: "HabitatTests/InspectionTests.swift", line: secondLine))
            #expect(frames[0].changedFields.isEmpty, "a scope's base is its stack's bottom")
        }
        #expect(stack.frames.map(\.origin.operation) == [.base], "the outside is as it was")
    }

    /// Two tests running at once, each in its own scope, each see only their own labels.
    @Test func aLabelInOneParallelScopeNeverShowsInAnother() async {
        let stack = makeStack()
        await withTaskGroup(of: [String?].self) { group in
            for name in ["left", "right"] {
                group.addTask {
                    await stack.withEnvironment({ _ in }) {
                        for round in 0..<200 {
                            stack.push(label: "\(name) \(round)") { $0.config.timeout = round }
                            await Task.yield()
                        }
                        return stack.frames.map(\.origin.label)
                    }
                }
            }
            for await labels in group {
                let owners = Set(labels.compactMap { $0?.split(separator: " ").first })
                #expect(owners.count == 1, "one scope's labels only: \(owners)")
                #expect(labels.count == 201)
            }
        }
    }

    @Test func aChangeCarriesTheOriginOfTheWriteThatMadeIt() async {
        let stack = makeStack()
        let changes = stack.changes
        let line: UInt = #line + 1
        stack.push(label: "traced") { $0.config.timeout = 1 }
        stack.pop()
        let observed = await collect(2, from: changes)
        #expect(observed[0].origin == FrameOrigin(.push, label: "traced", fileID: "HabitatTests/InspectionTests.swift", line: line))
        #expect(observed[1].origin == FrameOrigin(.pop, fileID: "HabitatTests/InspectionTests.swift", line: line + 1))
        #expect(observed[1].kind == .pop)
    }

    @Test func printAndDumpShowTheFramesNotTheStorageOrTheToken() {
        let stack = makeStack()
        stack.login(user: .ada, token: AuthToken("s3cr3t"))
        let line: UInt = #line + 1
        stack.push(label: "debugging") { $0.config.timeout = 1 }
        #expect("\(stack)".hasSuffix("; top: push \"debugging\" at \(file):\(line))"))
        #expect("\(stack)".contains("depth: 2"))
        var dumped = ""
        dump(stack, to: &dumped)
        #expect(dumped.contains("frames"))
        #expect(dumped.contains("debugging"))
        #expect(dumped.contains("login"))
        #expect(!dumped.contains("ManagedBuffer") && !dumped.contains("stamp"))
        #expect(!dumped.contains("s3cr3t"), "never the token")
    }
}
