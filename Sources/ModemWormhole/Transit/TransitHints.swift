#if canImport(Glibc)
import Glibc
#endif

/// Where a transit connection may be made: a TCP host and port (magic-wormhole's `direct-tcp-v1`
/// hint), with its priority.
public struct TransitHint: Sendable, Hashable, CustomStringConvertible {
    /// A host name or address.
    public var host: String
    /// The port.
    public var port: Int
    /// Higher first (magic-wormhole's `priority`; 0 by default).
    public var priority: Double

    /// Creates a hint.
    public init(host: String, port: Int, priority: Double = 0) {
        self.host = host
        self.port = port
        self.priority = priority
    }

    /// Parses `tcp:HOST:PORT` (the form of `--transit-helper`).
    /// - Throws: ``WormholeError`` (`.local`).
    public init(helper text: String) throws(WormholeError) {
        guard text.hasPrefix("tcp:"), let colon = text.lastIndex(of: ":"), colon > text.index(text.startIndex, offsetBy: 3) else {
            throw WormholeError(.local, "'\(text)': a transit helper is tcp:HOST:PORT")
        }
        var host = String(text[text.index(text.startIndex, offsetBy: 4)..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:%".contains($0)) }),
              let port = Int(text[text.index(after: colon)...]), (1...65_535).contains(port) else {
            throw WormholeError(.local, "'\(text)': a transit helper is tcp:HOST:PORT with a port from 1 to 65535")
        }
        self.init(host: host, port: port)
    }

    public var description: String { "tcp:\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    var json: JSONValue {
        ["type": "direct-tcp-v1", "hostname": .string(host), "port": .number(Double(port)), "priority": .number(priority)]
    }

    init?(json: JSONValue) {
        guard json["type"]?.string == "direct-tcp-v1", let host = json["hostname"]?.string, !host.isEmpty, host.utf8.count <= 253,
              host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:%".contains($0)) }),
              let port = json["port"]?.count, (1...65_535).contains(port) else { return nil }
        self.init(host: host, port: Int(port), priority: json["priority"]?.number ?? 0)
    }
}

/// A side's transit hints: where it listens (direct) and which relays it uses.
public struct TransitHints: Sendable, Equatable {
    /// Direct connections to the side itself.
    public var direct: [TransitHint]
    /// Transit relays (each relay-v1 hint's first direct-tcp-v1 address).
    public var relays: [TransitHint]

    /// Creates hints.
    public init(direct: [TransitHint] = [], relays: [TransitHint] = []) {
        self.direct = direct
        self.relays = relays
    }

    /// The `transit` message's body: abilities and hints (magic-wormhole's file-transfer v1).
    public var message: JSONValue {
        var hints: [JSONValue] = direct.map(\.json)
        for r in relays { hints.append(["type": "relay-v1", "hints": [r.json]]) }
        return ["abilities-v1": [["type": "direct-tcp-v1"], ["type": "relay-v1"]], "hints-v1": .array(hints)]
    }

    /// The hints of a `transit` message's body (unknown kinds skipped; at most 64 of each).
    public init(message: JSONValue) {
        var direct: [TransitHint] = [], relays: [TransitHint] = []
        for h in message["hints-v1"]?.array ?? [] {
            switch h["type"]?.string {
            case "direct-tcp-v1": if let d = TransitHint(json: h), direct.count < 64 { direct.append(d) }
            case "relay-v1":
                for r in h["hints"]?.array ?? [] { if let d = TransitHint(json: r), relays.count < 64 { relays.append(d) } }
            default: break
            }
        }
        self.init(direct: direct, relays: relays)
    }

    /// This machine's IPv4 addresses other than loopback (loopback alone when it has no other), as
    /// magic-wormhole offers them.
    public static func localAddresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return ["127.0.0.1"] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let e = entry {
            entry = e.pointee.ifa_next
            guard let addr = e.pointee.ifa_addr, addr.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(addr, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text != "127.0.0.1", !out.contains(text) { out.append(text) }
        }
        return out.isEmpty ? ["127.0.0.1"] : out
    }
}
