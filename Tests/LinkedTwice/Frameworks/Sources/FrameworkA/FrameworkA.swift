public import Habitat

/// Framework A's stack, made (and so checked) on first use.
public let stackA = EnvironmentStack(live: "live A", test: { "test A" })

/// What framework A's code reads.
public func readA() -> String { stackA.current.services }
