import Foundation
import Testing

// The one place that decides whether a test's outside peer is there (docs/testing.md, "Peers and
// services"). A test that needs a peer says so with a trait, `@Test(.requires(.tool("minimodem")))`:
// where the peer is missing the test is skipped and the reason is shown; with
// `SWIFTMODEM_REQUIRE_PEERS=1` (scripts/test.sh sets it when `CI` is set) it is a recorded failure
// naming the peer instead. No test checks for its peer itself, prints that it skipped, or returns early.

/// A program, Python environment, file or service from outside the package that some tests talk to
/// (minimodem, Dire Wolf, the Bumble venv, a PostgreSQL URL, ...): where it is, or why it is missing
/// and how to get it.
public struct Peer: Sendable, CustomStringConvertible {
    /// The environment variable that makes a missing peer a failure instead of a skip: `1` to require.
    public static let requireVariable = "SWIFTMODEM_REQUIRE_PEERS"

    /// Whether every missing peer is a failure (`SWIFTMODEM_REQUIRE_PEERS=1`, set by scripts/test.sh in CI).
    public static var areRequired: Bool { ProcessInfo.processInfo.environment[requireVariable] == "1" }

    /// The peer's name in messages ("minimodem", "the Bumble venv").
    public let name: String
    /// Where it is (an executable, a file, a URL), or nil when it is missing here.
    public let location: String?
    /// How to get it when it is missing ("apt-get install minimodem").
    public let remedy: String

    /// A peer found at `location` (nil: missing), named `name`; `remedy` says how to get it.
    public init(name: String, location: String?, remedy: String) {
        self.name = name
        self.location = location
        self.remedy = remedy
    }

    /// Whether it is there.
    public var isAvailable: Bool { location != nil }

    /// Why it is missing, with how to get it (the skip's reason and the failure's message).
    public var missingReason: String { "\(name) is not available here (\(remedy))" }

    public var description: String { location.map { "\(name) at \($0)" } ?? missingReason }

    /// Where it is; throws ``PeerMissing`` naming it and how to get it when it is missing.
    public func path() throws(PeerMissing) -> String {
        guard let location else { throw PeerMissing(peer: self) }
        return location
    }

    /// The root of this package (beside Package.swift), from this file's path.
    public static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// An executable found on `PATH` by its `command` name, from the apt package `package` (by default
    /// the command's name), which scripts/install-deps.sh installs.
    public static func tool(_ command: String, package: String? = nil) -> Peer {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        let found = directories.lazy.map { "\($0)/\(command)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        return Peer(name: command, location: found,
                    remedy: "scripts/install-deps.sh installs it: apt-get install \(package ?? command)")
    }

    /// One of the package's Python environments, made by `scripts/NAME-venv.sh` in `.build/NAME-venv`
    /// (or in the folder the environment variable `folderVariable` names): its python, available once
    /// the script finished it (scripts/venv.sh writes `.requirements` after the last module was
    /// installed). When the environment variable `pythonVariable` names a python, that one instead.
    public static func venv(_ name: String, pythonVariable: String? = nil, folderVariable: String? = nil) -> Peer {
        let environment = ProcessInfo.processInfo.environment
        if let pythonVariable, let python = environment[pythonVariable], !python.isEmpty {
            return Peer(name: "the \(name) venv's python", location: FileManager.default.isExecutableFile(atPath: python) ? python : nil,
                        remedy: "\(pythonVariable)=\(python) is not an executable")
        }
        let folder = folderVariable.flatMap { environment[$0] }.flatMap { $0.isEmpty ? nil : $0 }
            ?? packageRoot + "/.build/\(name)-venv"
        let python = folder + "/bin/python"
        let complete = FileManager.default.isExecutableFile(atPath: python)
            && FileManager.default.fileExists(atPath: folder + "/.requirements")
        let others = [pythonVariable, folderVariable].compactMap { $0.map { "set \($0)" } }
        return Peer(name: "the \(name) venv (\(folder))", location: complete ? python : nil,
                    remedy: (["run bash scripts/\(name)-venv.sh"] + others).joined(separator: ", or "))
    }

    /// An executable at a fixed `path` (a built binary, `/usr/bin/openssl`), named `name`.
    public static func executable(_ path: String, name: String? = nil, remedy: String) -> Peer {
        Peer(name: name ?? path, location: FileManager.default.isExecutableFile(atPath: path) ? path : nil, remedy: remedy)
    }

    /// A file that must exist at `path` (a configuration, a device), named `name`.
    public static func file(_ path: String, name: String? = nil, remedy: String) -> Peer {
        Peer(name: name ?? path, location: FileManager.default.fileExists(atPath: path) ? path : nil, remedy: remedy)
    }

    /// A service named by an environment variable (`HUB_TEST_POSTGRES_URL`): its value, when set and not empty.
    public static func environment(_ variable: String, name: String, remedy: String) -> Peer {
        let value = ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        return Peer(name: name, location: value, remedy: "set \(variable): \(remedy)")
    }
}

/// A peer a test needs is missing where peers are required (or where the test asked for its path).
public struct PeerMissing: Error, CustomStringConvertible, Sendable {
    /// The missing peer.
    public let peer: Peer
    /// The error for the missing `peer`.
    public init(peer: Peer) { self.peer = peer }

    public var description: String {
        Peer.areRequired ? "\(peer.missingReason); \(Peer.requireVariable)=1 requires every peer"
                         : peer.missingReason
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test (or suite) only where every one of `peers` is available. Where one is missing
    /// the test is skipped with the reason shown (the first missing peer and how to get it); with
    /// `SWIFTMODEM_REQUIRE_PEERS=1` it is not skipped but fails with that reason (swift-testing
    /// records the error a condition throws as the test's issue).
    public static func requires(_ peers: Peer...) -> Self {
        let missing = peers.first { !$0.isAvailable }
        return .enabled(Comment(rawValue: missing?.missingReason ?? "needs \(peers.map(\.name).joined(separator: ", "))")) {
            guard let missing else { return true }
            if Peer.areRequired { throw PeerMissing(peer: missing) }
            return false
        }
    }

}
