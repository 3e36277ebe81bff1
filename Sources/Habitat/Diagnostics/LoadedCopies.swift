import Foundation
import _HabitatShims

// Habitat linked twice: a dynamic framework of the app and the test bundle each with a static
// copy (Factory's users met it with Xcode 27: test registrations never reached the code under
// test). Each copy has its own task-locals, so a scope a test opens through one copy is invisible
// to code that reads through the other. Nothing fails loudly; this says so at the first read.

/// The copies of Habitat's code loaded in this process, found once per copy by a handshake
/// through Foundation's notification center (Foundation is loaded once, whoever links it).
package enum LoadedCopies {
    /// This copy, as the others see it: the image that holds it, and an address in it.
    private final class Marker {}

    /// This copy's name: its image's path and the address of a type only it has.
    static let mine: String = {
        let address = unsafeBitCast(Marker.self as AnyObject.Type, to: UnsafeRawPointer.self)
        let image = habitat_image_path(address).map { String(cString: $0) } ?? "an image"
        return "\(image) (\(address))"
    }()

    /// The copies loaded before this one, by name; empty when this is the only one.
    ///
    /// Each copy answers the later ones' greeting for the life of the process, so the later copy
    /// of any two finds the earlier, whichever checks first.
    package static let earlier: [String] = {
        let center = NotificationCenter.default
        let hello = Notification.Name("Habitat.LoadedCopies.hello")
        let here = Notification.Name("Habitat.LoadedCopies.here")
        let mine = Self.mine
        _ = center.addObserver(forName: hello, object: nil, queue: nil) { note in
            guard let other = note.userInfo?["copy"] as? String, other != mine else { return }
            center.post(name: here, object: nil, userInfo: ["copy": mine, "to": other])
        }
        let found = LockedBox<[String]>([])
        let replies = center.addObserver(forName: here, object: nil, queue: nil) { note in
            guard note.userInfo?["to"] as? String == mine, let other = note.userInfo?["copy"] as? String else { return }
            found.withLock { $0.append(other) }
        }
        center.post(name: hello, object: nil, userInfo: ["copy": mine])
        center.removeObserver(replies)
        return found.withLock { $0 }
    }()

    /// The report, when Habitat is loaded more than once.
    package static var report: String? {
        guard !earlier.isEmpty else { return nil }
        let images = (earlier + [mine]).map { "  \($0)" }.joined(separator: "\n")
        return "Habitat is loaded twice: \(earlier.count + 1) copies of its code are in this process, in\n\(images)\n"
            + "Each copy has its own task-locals, so an environment a test installs through one copy never reaches code "
            + "that reads through another: the test's services never reach the code under test. It happens when Habitat "
            + "is linked statically into two images, a dynamic framework of the app and the test bundle, say. Link it into "
            + "one: let only the framework depend on the Habitat products and the test target reach them through it "
            + "(in Xcode, \"Do Not Embed\" Habitat in the test target), or link every image to one dynamic library that "
            + "holds Habitat (a `.library(name:type: .dynamic, targets:)` product of your own)."
    }

    /// Reports a second copy, once per copy, in a test run: to the test framework when
    /// HabitatTesting is loaded, on standard error otherwise.
    package static func check() {
        _ = reported
    }

    private static let reported: Void = {
        guard EnvironmentContext.current == .test, let report else { return }
        if let testReporter {
            testReporter.loadedTwice(report)
        } else {
            FileHandle.standardError.write(Data("[Habitat] warning: \(report)\n".utf8))
        }
    }()
}
