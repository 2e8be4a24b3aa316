import Foundation
import ModemCrypto
import ModemRuntime
import Synchronization

/// A `ws://HOST[:PORT]/PATH` or `wss://HOST[:PORT]/PATH` address. `wss://` is WebSocket over TLS
/// (OpenSSL's libssl, ``TLSTrust``): the server's certificate is always verified, against the system's
/// store and ``trust``'s extra certificates, and must name ``host``.
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    /// Whether the connection runs over TLS (`wss://`).
    public var secure: Bool
    /// The host (a name, an IPv4 literal or an IPv6 literal without brackets).
    public var host: String
    /// The port (80 for `ws://`, 443 for `wss://`, unless given).
    public var port: Int
    /// The path and query (`/v1`).
    public var path: String
    /// Whom a `wss://` connection trusts (the system's store unless told more); unused by `ws://`.
    public var trust: TLSTrust = .system

    /// Parses a URL.
    /// - Throws: ``WormholeError`` (`.local`) naming the problem.
    public init(_ text: String) throws(WormholeError) {
        let lower = text.lowercased()
        if lower.hasPrefix("wss://") {
            secure = true
        } else if lower.hasPrefix("ws://") {
            secure = false
        } else {
            throw WormholeError(.local, "'\(text)' is not a ws:// or wss:// URL (ws://HOST:PORT/PATH)")
        }
        let rest = text.dropFirst(secure ? 6 : 5)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        path = slash == rest.endIndex ? "/" : String(rest[slash...])
        var hostPart = Substring(authority)
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw WormholeError(.local, "'\(text)': the IPv6 address has no ']'") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portPart = after.dropFirst() } else if !after.isEmpty {
                throw WormholeError(.local, "'\(text)': junk after the IPv6 address")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty, hostPart.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:%".contains($0)) }) else {
            throw WormholeError(.local, "'\(text)': the host is missing or not a host name")
        }
        host = String(hostPart)
        if let portPart {
            guard let p = Int(portPart), (1...65_535).contains(p) else { throw WormholeError(.local, "'\(text)': the port is not a number from 1 to 65535") }
            port = p
        } else {
            port = secure ? 443 : 80
        }
        guard path.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0.asciiValue! >= 0x21 }) else {
            throw WormholeError(.local, "'\(text)': the path has spaces or control characters")
        }
    }

    public var description: String { "\(secure ? "wss" : "ws")://\(authority)\(path)" }

    /// `HOST:PORT` (the IPv6 literal in brackets), as the errors name the server.
    var authority: String { "\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// The port unless it is the scheme's default.
    var isDefaultPort: Bool { port == (secure ? 443 : 80) }
}

/// A WebSocket client (RFC 6455) on one TCP connection, for text messages: the opening handshake
/// (the key and `Sec-WebSocket-Accept` checked), masked frames out, fragmented messages put
/// together, pings answered, the closing handshake. Messages over ``maximumMessageBytes`` end the
/// connection (a hostile server cannot make memory grow). `wss://` runs the same over a TLS
/// connection (OpenSSL's libssl, verified as ``TLSTrust`` says). Not supported: extensions.
public final class WebSocketClient: Sendable {
    /// The largest message accepted from the server.
    public static let maximumMessageBytes = 1 << 20
    private let stream: Connection
    private struct ReadState {
        var decoder = WebSocketFrameDecoder(maximumPayload: WebSocketClient.maximumMessageBytes)
        var closed = false
    }
    private let readState = Mutex(ReadState())

    /// The bytes under the WebSocket: a TCP connection, or TLS over one.
    private enum Connection: Sendable {
        case plain(ByteStream)
        case tls(TLSStream)

        func read(maximum: Int, deadline: Deadline? = nil) async throws(WormholeError) -> [UInt8] {
            switch self {
            case .plain(let s): try await s.read(maximum: maximum, deadline: deadline)
            case .tls(let s): try await s.read(maximum: maximum, deadline: deadline)
            }
        }

        func write(_ bytes: [UInt8], deadline: Deadline? = nil) async throws(WormholeError) {
            switch self {
            case .plain(let s): try await s.write(bytes, deadline: deadline)
            case .tls(let s): try await s.write(bytes, deadline: deadline)
            }
        }

        func shutdownWrite() async {
            switch self {
            case .plain(let s): s.shutdownWrite()
            case .tls(let s): await s.shutdownWrite()
            }
        }

        func close() {
            switch self {
            case .plain(let s): s.close()
            case .tls(let s): s.close()
            }
        }
    }

    private init(stream: Connection, leftover: [UInt8]) {
        self.stream = stream
        readState.withLock { $0.decoder.feed(leftover) }
    }

    /// Connects (and for `wss://` runs the TLS handshake, verifying the server's certificate) and runs
    /// the opening handshake within `timeout` seconds of `clock`.
    /// - Throws: ``WormholeError`` (`.network` for the connection, `.certificate` for a `wss://`
    ///   server whose certificate is not trusted, `.certificateNotForHost` for one not for its host, `.server` for an answer that is
    ///   not a WebSocket upgrade or a TLS handshake that failed).
    public static func connect(_ url: WebSocketURL, timeout: Double = 15, clock: TimerClock = .continuous) async throws(WormholeError) -> WebSocketClient {
        let deadline = clock.deadline(after: timeout)
        let tcp = try await ByteStream.connect(host: url.host, port: url.port, deadline: deadline)
        let stream: Connection = url.secure
            ? .tls(try await TLSStream.handshake(over: tcp, host: url.host, name: "wss://\(url.authority)", trust: url.trust, deadline: deadline))
            : .plain(tcp)
        let key = Data(secureRandomBytes(16)).base64EncodedString()
        let hostHeader = (url.host.contains(":") ? "[\(url.host)]" : url.host) + (url.isDefaultPort ? "" : ":\(url.port)")
        let request = "GET \(url.path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nUser-Agent: modem/\(wormholeClientVersion)\r\n\r\n"
        try await stream.write(Array(request.utf8), deadline: deadline)
        var head: [UInt8] = []
        var end: Int?
        while end == nil {
            let part = try await stream.read(maximum: 4096, deadline: deadline)
            if part.isEmpty { throw WormholeError(.server, "\(url) closed the connection instead of answering the WebSocket upgrade") }
            head += part
            if let r = head.firstRange(of: [13, 10, 13, 10]) { end = r.upperBound }
            if end == nil && head.count > 16_384 { throw WormholeError(.server, "\(url) answered the upgrade with over 16 KiB of headers") }
        }
        let lines = String(decoding: head[..<end!], as: UTF8.self).components(separatedBy: "\r\n")
        let status = lines.first ?? ""
        guard status.hasPrefix("HTTP/1.1 101") || status.hasPrefix("HTTP/1.0 101") else {
            throw WormholeError(.server, "\(url) is not a WebSocket endpoint (it answered '\(status.prefix(80))')")
        }
        var accept: String?
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].trimmingCharacters(in: .whitespaces).lowercased() == "sec-websocket-accept" {
                accept = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        let expected = Data(SHA1.hash(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
        guard accept == expected else { throw WormholeError(.server, "\(url) answered the upgrade with a wrong Sec-WebSocket-Accept") }
        return WebSocketClient(stream: stream, leftover: Array(head[end!...]))
    }

    /// Sends one text message.
    /// - Throws: ``WormholeError`` (`.network`).
    public func send(text: String) async throws(WormholeError) {
        try await sendFrame(opcode: 1, payload: Array(text.utf8))
    }

    private func sendFrame(opcode: UInt8, payload: [UInt8]) async throws(WormholeError) {
        try await stream.write(WebSocketFrame(fin: true, opcode: opcode, payload: payload).encoded(mask: secureRandomBytes(4)))
    }

    /// The next text (or binary, as UTF-8) message; nil once the server closed the connection.
    /// - Throws: ``WormholeError`` (`.network` for the connection, `.server` for a protocol violation).
    public func receive() async throws(WormholeError) -> String? {
        var message: [UInt8] = []
        var inMessage = false
        while true {
            guard let (fin, opcode, payload) = try await nextFrame() else { return nil }
            switch opcode {
            case 0x8:  // close: answer it, then the connection is over
                try? await sendFrame(opcode: 0x8, payload: Array(payload.prefix(2)))
                await stream.shutdownWrite()
                readState.withLock { $0.closed = true }
                return nil
            case 0x9:
                try await sendFrame(opcode: 0xA, payload: payload)
            case 0xA:
                break
            case 0x1, 0x2:
                guard !inMessage else { throw WormholeError(.server, "the server began a message inside another") }
                message = payload
                inMessage = true
            case 0x0:
                guard inMessage else { throw WormholeError(.server, "the server sent a continuation frame outside a message") }
                message += payload
            default:
                throw WormholeError(.server, "the server sent a WebSocket frame of unknown type \(opcode)")
            }
            if message.count > Self.maximumMessageBytes {
                throw WormholeError(.server, "the server sent a message over \(Self.maximumMessageBytes) bytes")
            }
            if inMessage && fin && (opcode == 0 || opcode == 1 || opcode == 2) {
                guard let text = String(validating: message, as: UTF8.self) else { throw WormholeError(.server, "the server sent a message that is not UTF-8") }
                return text
            }
        }
    }

    /// One frame: FIN, opcode, unmasked payload; nil when the connection ended between frames.
    private func nextFrame() async throws(WormholeError) -> (Bool, UInt8, [UInt8])? {
        while true {
            let parsed: Result<WebSocketFrame?, WormholeError> = readState.withLock { s in
                do throws(WormholeError) { return .success(try s.decoder.next()) } catch { return .failure(error) }
            }
            if let f = try parsed.get() { return (f.fin, f.opcode, f.payload) }
            if readState.withLock({ $0.closed }) { return nil }
            let more = try await stream.read(maximum: 65_536)
            if more.isEmpty { return nil }
            readState.withLock { $0.decoder.feed(more) }
        }
    }

    /// Sends a close frame (normal closure) and closes the connection.
    public func close() async {
        let wasClosed = readState.withLock { s in defer { s.closed = true }; return s.closed }
        if !wasClosed { try? await sendFrame(opcode: 0x8, payload: [0x03, 0xE8]) }
        stream.close()
    }
}

/// This client's version, as it names itself to servers.
public let wormholeClientVersion = "0.1.0"
