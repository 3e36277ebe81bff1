import Foundation
import Testing

/// A directory of the test's own, removed when the test ends.
final class TemporaryDirectory: Sendable {
    let url: URL
    var path: String { url.path }

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("habitat-tests-\(UUID().uuidString)")
        // Owner-only, as the stores ask of a directory they trust, whatever the umask.
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
        )
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Every regular file below the directory, with its contents.
    func allFiles() throws -> [(path: String, data: Data)] {
        guard let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey]) else {
            return []
        }
        var files: [(String, Data)] = []
        for case let file as URL in enumerator {
            if try file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true {
                files.append((file.path, try Data(contentsOf: file)))
            }
        }
        return files
    }

    /// Whether `needle` appears in any file below the directory.
    func anyFileContains(_ needle: String) throws -> Bool {
        try allFiles().contains { $0.data.range(of: Data(needle.utf8)) != nil }
    }
}

func permissions(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
