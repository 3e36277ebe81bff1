import FrameworkA
import Habitat
import HabitatTesting
import Testing

/// The test bundle links Habitat (through HabitatTesting) and framework A holds a copy too: the
/// first read through the second copy is an issue that says Habitat is loaded twice.
@Test func habitatLoadedTwiceIsReportedAtTheFirstRead() {
    withKnownIssue("expected, not a failure: the point of this test is the report") {
        _ = readA()   // framework A's copy
        _ = EnvironmentStack(live: "bundle", test: { "test" })   // made by the test bundle's copy
    } matching: { issue in
        let report = issue.comments.map(\.rawValue).joined(separator: "\n")
        return report.contains("Habitat is loaded twice") && report.contains("libFrameworkA")
            && report.contains("Do Not Embed")
    }
}
