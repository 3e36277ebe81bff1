public import Habitat

/// Framework B's stack, made (and so checked) on first use.
public let stackB = EnvironmentStack(live: "live B", test: { "test B" })

/// What framework B's code reads.
public func readB() -> String { stackB.current.services }
