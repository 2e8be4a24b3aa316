import Foundation
import Testing
import ModemTestSupport
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Where things are: the package, its fixtures, the `modem` binary and the peer tools.
enum Paths {
    /// The package root, from this file's path (`<root>/Tests/ModemCLITests/Support/CLIHarness.swift`).
    static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// `Fixtures/fsk` of this checkout.
    static let fixtures = packageRoot + "/Fixtures/fsk"

    /// Folders where the `modem` binary may be, best first: `$MODEM_BINARY`'s (if set) is handled by
    /// ``modem()``; then the folder of the running test executable (SwiftPM puts the test runner
    /// and the product executables of one configuration side by side, e.g. `.build/debug`), the
    /// folder of `argv[0]`, a few parents of both (for bundle layouts like
    /// `X.xctest/Contents/MacOS/X`), then `<package>/.build/debug` and `.build/release`.
    static var modemCandidates: [String] {
        var folders: [URL] = []
        if let exe = Bundle.main.executableURL?.resolvingSymlinksInPath() { folders.append(exe.deletingLastPathComponent()) }
        if let arg0 = CommandLine.arguments.first, !arg0.isEmpty {
            let url = URL(fileURLWithPath: arg0, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            folders.append(url.resolvingSymlinksInPath().deletingLastPathComponent())
        }
        var withParents: [URL] = []
        for folder in folders {
            var f = folder
            for _ in 0..<4 {
                withParents.append(f)
                f = f.deletingLastPathComponent()
            }
        }
        var paths = withParents.map { $0.appendingPathComponent("modem").path }
        paths += [packageRoot + "/.build/debug/modem", packageRoot + "/.build/release/modem"]
        var seen = Set<String>()
        return paths.filter { seen.insert($0).inserted }
    }

    /// The `modem` binary to test: `$MODEM_BINARY`, else the first of ``modemCandidates`` that is an
    /// executable file (not a folder). Throws, with the places looked at, when there is none.
    static func modem() throws -> String {
        if let env = ProcessInfo.processInfo.environment["MODEM_BINARY"], !env.isEmpty {
            guard isExecutableFile(env) else { throw HarnessError("MODEM_BINARY=\(env) is not an executable file") }
            return env
        }
        let candidates = modemCandidates
        if let found = candidates.first(where: isExecutableFile) { return found }
        throw HarnessError("""
            the `modem` executable was not found; looked at:
              \(candidates.joined(separator: "\n  "))
            Build it first (`swift build --product modem`), or set MODEM_BINARY=/path/to/modem.
            """)
    }

    static func isExecutableFile(_ path: String) -> Bool {
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDir) && !isDir.boolValue
            && FileManager.default.isExecutableFile(atPath: path)
    }
}

/// The outside programs these tests run, looked up once; tests that need one carry `.requires(Peers.X)`.
enum Peers {
    static let minimodem = Peer.tool("minimodem")
    static let sox = Peer.tool("sox")
    /// Dire Wolf's test tools.
    static let atest = Peer.tool("atest", package: "direwolf")
    static let genPackets = Peer.tool("gen_packets", package: "direwolf")
    static let kissutil = Peer.tool("kissutil", package: "direwolf")
    /// Dire Wolf 1.8 (development, commit 44f576c), for IL2P, which Debian's 1.6 lacks: built from the
    /// archive in Fixtures/peers by scripts/direwolf18.sh (scripts/test.sh runs it) into
    /// .build/direwolf18/bin, or found in the folder `DIREWOLF18_BIN` names.
    static let direwolf18Bin = ProcessInfo.processInfo.environment["DIREWOLF18_BIN"].flatMap { $0.isEmpty ? nil : $0 }
        ?? Peer.packageRoot + "/.build/direwolf18/bin"
    static let atest18 = Peer.executable(direwolf18Bin + "/atest", name: "Dire Wolf 1.8's atest",
                                         remedy: "run bash scripts/direwolf18.sh, or set DIREWOLF18_BIN")
    static let genPackets18 = Peer.executable(direwolf18Bin + "/gen_packets", name: "Dire Wolf 1.8's gen_packets",
                                              remedy: "run bash scripts/direwolf18.sh, or set DIREWOLF18_BIN")
    static let python3 = Peer.tool("python3")
    /// Wireshark's command line.
    static let tshark = Peer.tool("tshark")
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A private temporary folder, removed when dropped.
final class Scratch: Sendable {
    let path: String

    init(_ label: String = "ModemCLITests") throws {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(UUID().uuidString.prefix(12))", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A path inside the folder.
    func file(_ name: String) -> String { path + "/" + name }

    /// Writes bytes to `name`; returns the path.
    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let p = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: p))
        return p
    }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String { try write(name, Array(text.utf8)) }
}

/// Reads a whole file.
func readBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Runs `executable` with `arguments` to completion on the tests' runner (``ProcessTestSupport/runProcess(_:_:stdin:stdout:stderr:environment:workingDirectory:timeout:)``):
/// standard input from `stdinFile` (else /dev/null), standard output and error captured, killed
/// after `timeout` seconds (a hang guard).
func runProcess(_ executable: String, _ arguments: [String], stdinFile: String? = nil,
                timeout: Double = 30) async throws -> ProcessResult {
    try await runProcess(executable, arguments, stdin: stdinFile.map { .file($0) } ?? .none, timeout: timeout)
}

/// Runs the `modem` binary.
func modem(_ arguments: [String], stdinFile: String? = nil, timeout: Double = 30) async throws -> ProcessResult {
    try await runProcess(try Paths.modem(), arguments, stdinFile: stdinFile, timeout: timeout)
}

/// Runs minimodem (callers carry `.requires(Peers.minimodem)`).
func minimodem(_ arguments: [String], stdinFile: String? = nil, timeout: Double = 30) async throws -> ProcessResult {
    try await runProcess(try Peers.minimodem.path(), arguments, stdinFile: stdinFile, timeout: timeout)
}

/// Runs sox (callers carry `.requires(Peers.sox)`).
func sox(_ arguments: [String]) async throws -> ProcessResult {
    try await runProcess(try Peers.sox.path(), arguments)
}

/// Records an issue (with the whole result) unless the process exited 0 by itself.
@discardableResult
func expectSuccess(_ r: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    let ok = r.succeeded
    #expect(ok, "\(r)", sourceLocation: sourceLocation)
    return ok
}

/// `modem tx <arguments> --out <path> <input>`, checked to succeed.
func modemTx(_ arguments: [String], input: String, out: String,
             sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let r = try await modem(["tx", "-q"] + arguments + ["--out", out, input])
    guard r.succeeded else {
        Issue.record("modem tx failed: \(r)", sourceLocation: sourceLocation)
        throw HarnessError("modem tx failed")
    }
    #expect(r.stdout.isEmpty, "modem tx wrote to stdout: \(r)", sourceLocation: sourceLocation)
}

/// A readable rendering of bytes for failure messages: the first difference and around it.
func describeDifference(expected: [UInt8], got: [UInt8]) -> String {
    let common = zip(expected, got).prefix { $0 == $1 }.count
    func show(_ b: ArraySlice<UInt8>) -> String {
        b.map { (0x20..<0x7f).contains($0) ? String(UnicodeScalar($0)) : String(format: "\\x%02x", $0) }.joined()
    }
    let lo = max(0, common - 12)
    return "expected \(expected.count) bytes, got \(got.count); first difference at byte \(common): "
        + "expected \"\(show(expected[lo..<min(expected.count, common + 12)]))\", "
        + "got \"\(show(got[min(lo, got.count)..<min(got.count, common + 12)]))\""
}

/// Deterministic texts for the tests.
enum Texts {
    /// About 120 bytes of mixed ASCII.
    static let pangrams = """
        The quick brown fox jumps over the lazy dog. PACK MY BOX WITH FIVE DOZEN LIQUOR JUGS!
        0123456789 <>[]{}()~^`@#$%&*_+=-|\\/?!\t.

        """
    /// A few dozen bytes, for slow baud rates.
    static let short = "Slow and steady: 50 baud, 8 kHz.\n"
    /// Upper-case text that ITA2 Baudot can carry.
    static let baudot = "CQ CQ DE SWIFTMODEM K\nRYRYRY 0123456789 -?:$!&#()./;,'\"\nTHE QUICK BROWN FOX 73\n"

    /// `count` bytes of pseudo-random words (a fixed sequence), ending with a newline.
    static func words(_ count: Int, seed: UInt64 = 42) -> String {
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
                     "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
                     "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
                     "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "Hello,", "World!"]
        var state = seed
        var s = ""
        while s.utf8.count < count - 1 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            s += words[Int((state >> 33) % UInt64(words.count))] + " "
        }
        return String(s.utf8.prefix(count - 1))! + "\n"
    }
}

extension TNCBackgroundProcess {
    /// Starts a background process named `name` in messages, with standard input from a pipe when
    /// `stdinPipe` (else /dev/null); the folder `dir` is kept as long as the process object.
    convenience init(_ executable: String, _ arguments: [String], in dir: Scratch, name: String, stdinPipe: Bool = false) async throws {
        try await self.init(executable, arguments, name: name, stdin: stdinPipe ? .pipe : .none)
        keepAlive = dir
    }
}

/// Bash functions for the process-level scripts (prepend to a script): they wait for events (a
/// line in a file, a file appearing), never for a time that "should be enough".
enum Bash {
    static let prelude = #"""
    # wait_for WHAT COMMAND...: runs COMMAND every 0.05 s until it succeeds; after 60 s (a hang guard,
    # far above any expected wait) prints "timed out waiting for WHAT" on standard error and fails.
    wait_for() {
      local what=$1 n=0
      shift
      until "$@"; do
        n=$((n + 1))
        if [ "$n" -ge 1200 ]; then echo "timed out waiting for $what" >&2; return 1; fi
        sleep 0.05
      done
    }
    # has_lines FILE PATTERN N: FILE has at least N lines matching PATTERN (grep -E).
    has_lines() { local c; c=$(grep -cE -- "$2" "$1" 2>/dev/null); [ "${c:-0}" -ge "$3" ]; }
    # listen_port FILE: the port of the "listening on tcp:127.0.0.1:PORT" line that
    # `modem mailbox|receive --listen tcp:127.0.0.1:0` printed into FILE (empty until it did).
    listen_port() { sed -n 's/^listening on tcp:127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$1" 2>/dev/null | head -n 1; }
    has_port() { [ -n "$(listen_port "$1")" ]; }
    # ended FILE: `modem mailbox` logged the end of its session into FILE (or the script is ending:
    # a file named release exists). An input held open by a wait ends with it: `wait PID` of a
    # pipeline waits for the whole pipeline.
    ended() { [ -e release ] || grep -qE '^(disconnected|connect failed)' "$1" 2>/dev/null; }

    """#
}
