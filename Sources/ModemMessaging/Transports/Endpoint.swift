/// Where a session goes: `tcp:HOST:PORT`, `audio:DEVICE`, `bt:ADDR` (the CLI's `--listen` and `--to`).
public enum Endpoint: Sendable, Equatable, CustomStringConvertible {
    /// TCP: a host name or an IPv4/IPv6 literal (IPv6 in brackets: `tcp:[::1]:5000`) and a port.
    case tcp(host: String, port: Int)
    /// The channel protocol over a sound device (an ALSA name).
    case audio(device: String)
    /// The channel protocol over Bluetooth RFCOMM to a device address `AA:BB:CC:DD:EE:FF`.
    case bluetooth(address: String)

    /// Parses an endpoint.
    /// - Throws: ``EndpointError`` naming the bad part.
    public static func parse(_ text: String) throws(EndpointError) -> Endpoint {
        guard let colon = text.firstIndex(of: ":") else {
            throw EndpointError("'\(text)' is not an endpoint: write tcp:HOST:PORT, audio:DEVICE or bt:ADDR", isKindProblem: true)
        }
        let scheme = text[..<colon].lowercased()
        let rest = String(text[text.index(after: colon)...])
        switch scheme {
        case "tcp":
            return try parseTCP(rest, whole: text)
        case "audio":
            guard !rest.isEmpty else { throw EndpointError("'\(text)': the sound device is missing (audio:DEVICE, e.g. audio:default)") }
            guard !rest.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true }) else {
                throw EndpointError("'\(text)': the sound device name '\(rest)' contains spaces or control characters")
            }
            return .audio(device: rest)
        case "bt":
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) }) else {
                throw EndpointError("'\(text)': the Bluetooth address '\(rest)' is not six hex pairs like 00:1A:7D:DA:71:13")
            }
            return .bluetooth(address: rest.uppercased())
        default:
            // HOST:PORT without a kind: most likely meant for TCP.
            if !rest.isEmpty, rest.allSatisfy(\.isNumber), !scheme.isEmpty,
               scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }) {
                throw EndpointError("'\(text)' has no kind: for TCP write tcp:\(text) (the kinds are tcp:HOST:PORT, audio:DEVICE and bt:ADDR)", isKindProblem: true)
            }
            throw EndpointError("'\(text)': unknown kind '\(scheme)' (the kinds are tcp:HOST:PORT, audio:DEVICE and bt:ADDR)", isKindProblem: true)
        }
    }

    private static func parseTCP(_ rest: String, whole: String) throws(EndpointError) -> Endpoint {
        let host: String
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw EndpointError("'\(whole)': the IPv6 address has no closing ']' (write tcp:[::1]:PORT)")
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { throw EndpointError("'\(whole)': the port is missing after ']' (write tcp:[::1]:PORT)") }
            portText = after.dropFirst()
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." || $0 == "%" || $0.isLetter || $0.isNumber }) else {
                throw EndpointError("'\(whole)': '\(host)' is not an IPv6 address")
            }
        } else {
            guard let colon = rest.lastIndex(of: ":") else {
                throw EndpointError("'\(whole)': the port is missing (write tcp:HOST:PORT)")
            }
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
            guard !host.contains(":") else {
                throw EndpointError("'\(whole)': an IPv6 address goes in brackets (tcp:[\(host)]:PORT)")
            }
        }
        guard !host.isEmpty else { throw EndpointError("'\(whole)': the host is missing (write tcp:HOST:PORT, e.g. tcp:127.0.0.1:5000)") }
        guard host.utf8.count <= 253, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:%".contains($0)) }) else {
            throw EndpointError("'\(whole)': '\(host)' is not a host name or address")
        }
        guard !portText.isEmpty else { throw EndpointError("'\(whole)': the port is missing (write tcp:HOST:PORT)") }
        guard let port = Int(portText), (1...65_535).contains(port) else {
            throw EndpointError("'\(whole)': the port '\(portText)' is not a number from 1 to 65535")
        }
        return .tcp(host: host, port: port)
    }

    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case .audio(let device): "audio:\(device)"
        case .bluetooth(let address): "bt:\(address)"
        }
    }
}

/// An endpoint that does not parse; the description names the bad part.
public struct EndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problem in words.
    public let description: String
    /// Whether the kind (`tcp:`, `audio:`, `bt:`) is missing or unknown, rather than a part after it
    /// being wrong: a caller that knows more kinds may name them.
    public let isKindProblem: Bool
    /// Creates an error.
    public init(_ description: String, isKindProblem: Bool = false) {
        self.description = description
        self.isKindProblem = isKindProblem
    }
}
