// Calls an unimplemented endpoint outside any test, so a test can check that it prints a
// warning and carries on instead of crashing.
import HabitatTesting

let endpoint: @Sendable (Int) -> String = unimplementedEndpoint("Probe.endpoint", placeholder: "placeholder")
print("returned \(endpoint(1))")
