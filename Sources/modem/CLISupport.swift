#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import ModemAudio
import SwiftModem
import SystemPackage

/// Writes one line to standard error.
func printError(_ line: String) {
    var s = line
    if !s.hasSuffix("\n") { s += "\n" }
    s.withCString { p in _ = write(2, p, strlen(p)) }
}

/// Whether standard error is a terminal (progress is only drawn there).
var stderrIsTerminal: Bool { isatty(2) != 0 }

/// Exit status for a wrong command line, including option values that do not fit the input
/// (the argument parser's own status for usage errors, EX_USAGE).
let usageErrorStatus: Int32 = 64

/// Exit status when no connection could be made: nobody answered, the connection was refused, the
/// line never opened, no exchange completed, a rendezvous or pairing failed (README's table).
let connectionFailedStatus: Int32 = 3
/// Exit status when the other end went away during a session: a device that disconnected, a
/// mailbox peer or network lost.
let connectionLostStatus: Int32 = 4

/// A failure of the run, reported as one line on standard error (``reportingErrors(_:)``) with its
/// exit status: 1 unless it says otherwise (``connectionFailedStatus``, ``connectionLostStatus``).
struct CLIError: Error, CustomStringConvertible {
    var description: String
    var status: Int32
    init(_ description: String, status: Int32 = 1) {
        self.description = description
        self.status = status
    }
}

/// An option value that is wrong, found after parsing (e.g. it does not fit the input file):
/// reported as one line, exit status 64 like the parser's own usage errors.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`; any error becomes one line on standard error ("modem: <what>") and exit status 1
/// (a ``CLIError``'s own status), or 64 for option errors (``UsageError``, ``ModemSettingsError``, a channel the file lacks).
/// Usage errors from the argument parser keep their own status (64); an error after SIGINT/SIGTERM
/// is reported as the interruption (130).
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let e as ExitCode {
        throw e
    } catch _ where isStopRequested {
        // A call cut short by SIGINT/SIGTERM fails; the signal is the news.
        printError("modem: interrupted")
        throw ExitCode(interruptedStatus)
    } catch let e as CleanExit {
        throw e
    } catch let e as ValidationError {
        throw e
    } catch let e as UsageError {
        printError("modem: \(e.description)")
        throw ExitCode(usageErrorStatus)
    } catch let e as ModemSettingsError {
        printError("modem: \(e.description)")
        throw ExitCode(usageErrorStatus)
    } catch let e as AudioError where e.kind == .noSuchChannel || e.kind == .invalidParameter {
        printError("modem: \(e)")
        throw ExitCode(usageErrorStatus)
    } catch let e as CLIError {
        printError("modem: \(e.description)")
        throw ExitCode(e.status)
    } catch {
        printError("modem: \(error)")
        throw ExitCode(1)
    }
}

/// Writes text to standard output at once (unbuffered, so a failure is seen here: a full disk,
/// a closed pipe), retrying after signals.
/// - Throws: ``CLIError`` naming standard output and the reason.
func printOutput(_ text: String) throws {
    var line = text
    if !line.hasSuffix("\n") { line += "\n" }
    do {
        _ = try FileDescriptor.standardOutput.writeAll(Array(line.utf8))
    } catch let e as Errno {
        throw CLIError("standard output: write failed: \(e.description)")
    }
}

/// The status of an existing file, `-` being the descriptor `dash` (nil when it does not exist or
/// cannot be examined).
func fileStatus(_ path: String, dash: Int32) -> stat? {
    var st = stat()
    let rc = path == "-" ? fstat(dash, &st) : stat(path, &st)
    return rc == 0 ? st : nil
}

/// Device and inode of an existing file, `-` being standard input (nil when it does not exist or
/// cannot be examined).
func fileIdentity(path: String) -> (dev: UInt64, ino: UInt64)? {
    fileStatus(path, dash: 0).map { (UInt64($0.st_dev), UInt64($0.st_ino)) }
}

/// Refuses an output that is one of the inputs (compared by device and inode, so another name,
/// a link or `/dev/stdin` for the same file is caught), or a directory. A character device such
/// as `/dev/null` may be both.
/// - Parameters:
///   - output: the output path (`-` is standard output).
///   - inputs: the input paths (`-` is standard input).
/// - Throws: ``UsageError`` naming both.
func checkOutput(_ output: String, option: String, notSameAs inputs: [String]) throws {
    guard let st = fileStatus(output, dash: 1) else { return }   // it will be created
    let type = st.st_mode & S_IFMT
    if type == S_IFDIR { throw UsageError("\(option) \(output): is a directory") }
    if type == S_IFCHR { return }
    for input in inputs {
        guard let id = fileIdentity(path: input) else { continue }
        if id.dev == UInt64(st.st_dev) && id.ino == UInt64(st.st_ino) {
            let what = input == "-" ? "standard input" : input
            throw UsageError("\(option) \(output) is the same file as the input \(what): it would be read while it is written")
        }
    }
}

/// A command's discussion as swift-argument-parser should get it: each paragraph one line, which
/// the parser wraps to the terminal's width. Written in the source as text with hard line breaks,
/// a discussion would keep them and break mid-sentence wherever the terminal is narrower or wider
/// than the source. Lines are joined within a paragraph; a blank line ends a paragraph; an indented
/// line (an example, a list of events) keeps a line of its own, and so does a line that starts
/// with "Example" or "Exit status".
func helpText(_ text: String) -> String {
    var out: [String] = []
    var joinable = false
    for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let line = String(raw)
        if line.trimmingCharacters(in: .whitespaces).isEmpty {
            out.append("")
            joinable = false
        } else if line.first == " " {
            out.append(line)
            joinable = false
        } else if joinable && !line.hasPrefix("Example") && !line.hasPrefix("Exit status") {
            let previous = out.removeLast()
            out.append(previous.hasSuffix(" ") ? previous + line : previous + " " + line)
        } else {
            out.append(line)
            joinable = true
        }
    }
    return out.joined(separator: "\n")
}
