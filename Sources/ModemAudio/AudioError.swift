/// A failure of audio input or output, with what failed and, where there is one, the library's code.
public struct AudioError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is.
    public enum Kind: Sendable, Equatable {
        /// The file does not exist or cannot be opened.
        case cannotOpen
        /// The file is not audio that can be decoded (empty, truncated header, text, unknown format).
        case unsupportedFormat
        /// The requested channel does not exist in the file.
        case noSuchChannel
        /// Reading failed part-way.
        case readFailed
        /// Writing failed.
        case writeFailed
        /// A sound device could not be opened or configured.
        case deviceUnavailable
        /// A sound device failed while running (after recovery was attempted).
        case deviceFailed
        /// A parameter is out of its valid range.
        case invalidParameter
    }

    /// What kind of failure this is.
    public var kind: Kind
    /// The file path or device name concerned.
    public var subject: String
    /// A human-readable explanation, including the library's own message where it has one.
    public var message: String
    /// The underlying library or `errno` code, where there is one.
    public var code: Int32?

    /// Creates an error.
    public init(_ kind: Kind, subject: String, message: String, code: Int32? = nil) {
        self.kind = kind
        self.subject = subject
        self.message = message
        self.code = code
    }

    public var description: String {
        var s = "\(subject): \(message)"
        if let code { s += " (code \(code))" }
        return s
    }
}
