/// Text that came from another party (a peer's claimed name, its refusal's words, a file name, a
/// rendezvous server's message) made safe to print on a terminal: every scalar that could move the
/// cursor, start an escape sequence or reorder what is shown becomes `?`. One rule for every place that
/// prints such text (issue 32: a peer's words must never pass for more of the line, or for another line).
public enum TerminalText {
    /// Whether `scalar` is unsafe on a terminal: C0 controls (including ESC, CR and LF), DEL, C1 controls
    /// (U+0080-U+009F, among them CSI, U+009B, which some terminals act on alone), and the bidirectional
    /// controls that reorder what follows (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069).
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// `text` with every unsafe scalar (``isUnsafe(_:)``) replaced by `?`, cut to its first
    /// `maximumScalars` scalars when that is given.
    public static func safe(_ text: String, maximumScalars: Int? = nil) -> String {
        let scalars = maximumScalars.map { Array(text.unicodeScalars.prefix($0)) } ?? Array(text.unicodeScalars)
        return String(String.UnicodeScalarView(scalars.map { isUnsafe($0) ? "?" : $0 }))
    }
}
