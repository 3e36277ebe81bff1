// habitat-demo: a session that survives restarts.
//
//     swift run habitat-demo                          # a walkthrough in a temporary directory
//     swift run habitat-demo [--store DIR] login NAME [--token TOKEN]
//     swift run habitat-demo [--store DIR] status
//     swift run habitat-demo [--store DIR] logout

import Foundation
import SessionDemoKit

let result = SessionDemo.run(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
FileHandle.standardOutput.write(Data(result.output.utf8))
FileHandle.standardError.write(Data(result.errors.utf8))
exit(result.status)
