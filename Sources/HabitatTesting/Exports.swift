// `import HabitatTesting` is all a test file needs: the library itself, Swift Testing and XCTest
// come with it.
@_exported public import Habitat
@_exported public import HabitatPersistence
@_exported public import Testing
@_exported public import XCTest
