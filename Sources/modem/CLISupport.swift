#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser

/// Writes one line to standard error.
func printError(_ line: String) {
    var s = line
    if !s.hasSuffix("\n") { s += "\n" }
    s.withCString { p in _ = write(2, p, strlen(p)) }
}

/// Whether standard error is a terminal (progress is only drawn there).
var stderrIsTerminal: Bool { isatty(2) != 0 }

/// Runs `body`; any error becomes one line on standard error ("modem: <what>") and exit status 1.
/// Usage errors from the argument parser keep their own status (64).
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let e as ExitCode {
        throw e
    } catch let e as CleanExit {
        throw e
    } catch let e as ValidationError {
        throw e
    } catch {
        printError("modem: \(error)")
        throw ExitCode(1)
    }
}
