#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation

/// `modem hub ARGS`: runs `modem-hub ARGS` (the hub's client and server commands), found beside the
/// `modem` executable or on PATH. `modem` itself stays free of the hub's HTTP and WebSocket libraries.
struct HubCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "The hub's commands (modem-hub): login, join, listen, post, unpost, members, posts, serve, ...",
        discussion: helpText("""
        Runs `modem-hub ARGS`, found beside this `modem` or on PATH. Examples:
          modem hub login --hub http://127.0.0.1:8080 --client-id ID --client-secret-file secret.txt
          modem hub join bars --hello
          modem hub post bars p1 --json '{"text":"hi"}'
        Build it with `swift build --product modem-hub`.
        """))

    @Argument(parsing: .captureForPassthrough, help: "Arguments for modem-hub (`modem hub --help` shows its own help).")
    var arguments: [String] = []

    /// `modem-hub` beside the running `modem`, then on PATH; nil when neither exists.
    static func findHubBinary() -> String? {
        var candidates: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((exe as NSString).deletingLastPathComponent + "/modem-hub")
        } else if let arg0 = CommandLine.arguments.first, arg0.contains("/") {
            candidates.append((arg0 as NSString).deletingLastPathComponent + "/modem-hub")
        }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") where !dir.isEmpty {
            candidates.append(dir + "/modem-hub")
        }
        return candidates.first { path in
            var isDir: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDir) && !isDir.boolValue
                && access(path, X_OK) == 0
        }
    }

    func run() throws {
        guard let hub = Self.findHubBinary() else {
            printError("modem: modem-hub was not found beside modem or on PATH; build it with `swift build --product modem-hub`")
            // Asked for help: this command's own help is still true (and says where modem-hub's is).
            if arguments.contains("--help") || arguments.contains("-h") {
                print(Self.helpMessage())
                return
            }
            throw ExitCode(1)
        }
        // Replace this process: signals, standard streams and the exit status are modem-hub's own.
        let argv = ["modem-hub"] + arguments
        let cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        execv(hub, cArgs)
        let why = String(cString: strerror(errno))
        printError("modem: cannot run \(hub): \(why)")
        throw ExitCode(1)
    }
}
