#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime

/// A one-line progress display on standard error, drawn only when it is a terminal.
struct ProgressLine {
    let enabled: Bool
    private var lastDraw: Double = 0
    private var drawn = false

    init(enabled: Bool) { self.enabled = enabled && stderrIsTerminal }

    static func now() -> Double { SystemTime.monotonicSeconds() }

    /// Redraws at most 5 times a second.
    mutating func update(_ text: @autoclosure () -> String) {
        guard enabled else { return }
        let t = Self.now()
        guard t - lastDraw >= 0.2 else { return }
        lastDraw = t
        drawn = true
        let s = "\r\u{1B}[K" + text()
        s.withCString { p in _ = write(2, p, strlen(p)) }
    }

    /// Clears the line.
    mutating func clear() {
        guard enabled, drawn else { return }
        drawn = false
        let s = "\r\u{1B}[K"
        s.withCString { p in _ = write(2, p, strlen(p)) }
    }
}
