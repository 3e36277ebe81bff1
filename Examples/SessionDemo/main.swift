// habitat-demo: a session that survives restarts.
//
//     swift run habitat-demo                          # a walkthrough in a temporary directory
//     swift run habitat-demo [--store DIR] login NAME [--token TOKEN]
//     swift run habitat-demo [--store DIR] status
//     swift run habitat-demo [--store DIR] refresh
//     swift run habitat-demo [--store DIR] logout
//     swift run habitat-demo tour                     # the rest of the core API

import Foundation
import SessionDemoKit

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments == ["tour"] {
    try await runTour()
    exit(0)
}
let result = await SessionDemo.run(arguments, environment: ProcessInfo.processInfo.environment)
FileHandle.standardOutput.write(Data(result.output.utf8))
FileHandle.standardError.write(Data(result.errors.utf8))
exit(result.status)
