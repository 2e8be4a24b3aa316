// Whose request is it? Every limit per address is keyed on the client's address: the connection's own
// address, unless that is a reverse proxy the operator trusts (`modem-hub serve --trusted-proxy CIDR`),
// in which case the client is the right-most address of `X-Forwarded-For` that is not itself a trusted
// proxy. The header is believed from a trusted proxy only: anyone else could write any address in it.

import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An IPv4 or IPv6 network (`192.0.2.0/24`, `2001:db8::/32`, or one address: a /32 or /128).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The address's 16 bytes (IPv4 as an IPv4-mapped IPv6 address, `::ffff:a.b.c.d`).
    let bytes: [UInt8]
    /// The prefix length over the 16 bytes (an IPv4 /24 is 96 + 24).
    let prefix: Int

    /// Parses `ADDRESS` or `ADDRESS/PREFIX` (IPv4 0-32, IPv6 0-128); nil when it is neither.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, let (bytes, v4) = IPNetwork.parseAddress(String(first)) else { return nil }
        let width = v4 ? 32 : 128
        var length = width
        if parts.count == 2 {
            guard let n = Int(parts[1]), parts[1].allSatisfy(\.isASCII), (0...width).contains(n) else { return nil }
            length = n
        }
        self.bytes = bytes
        self.prefix = (v4 ? 96 : 0) + length
    }

    /// Whether `address` (IPv4 or IPv6 text) lies in this network.
    public func contains(_ address: String) -> Bool {
        guard let (other, _) = IPNetwork.parseAddress(address) else { return false }
        var left = prefix
        for i in 0..<16 where left > 0 {
            let bits = min(8, left)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if bytes[i] & mask != other[i] & mask { return false }
            left -= bits
        }
        return true
    }

    public var description: String {
        if prefix >= 96 && Array(bytes[0..<12]) == IPNetwork.mappedPrefix { return bytes[12...].map(String.init).joined(separator: ".") + "/\(prefix - 96)" }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":") + "/\(prefix)"
    }

    static let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]

    /// 16 bytes of an address, and whether it was written as IPv4 (dotted, without colons).
    static func parseAddress(_ text: String) -> ([UInt8], Bool)? {
        var t = Substring(text)
        if t.hasPrefix("[") && t.hasSuffix("]") { t = t.dropFirst().dropLast() }
        if let zone = t.firstIndex(of: "%") { t = t[..<zone] }  // fe80::1%eth0
        if !t.contains(":") {
            guard let v4 = parseIPv4(t) else { return nil }
            return (mappedPrefix + v4, true)
        }
        guard let v6 = parseIPv6(t) else { return nil }
        return (v6, false)
    }

    private static func parseIPv4(_ t: Substring) -> [UInt8]? {
        let parts = t.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard (1...3).contains(p.count), p.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(p), n <= 255 else { return nil }
            out.append(UInt8(n))
        }
        return out
    }

    private static func parseIPv6(_ t: Substring) -> [UInt8]? {
        guard t.count <= 45 else { return nil }
        let halves = t.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ s: String, allowV4Tail: Bool) -> [UInt8]? {
            if s.isEmpty { return [] }
            var out: [UInt8] = []
            let fields = s.split(separator: ":", omittingEmptySubsequences: false)
            for (i, f) in fields.enumerated() {
                if f.contains(".") {
                    guard allowV4Tail, i == fields.count - 1, let v4 = parseIPv4(f) else { return nil }
                    out += v4
                    continue
                }
                guard (1...4).contains(f.count), let n = UInt16(f, radix: 16) else { return nil }
                out += [UInt8(n >> 8), UInt8(n & 0xFF)]
            }
            return out
        }
        if halves.count == 1 {
            guard let all = groups(halves[0], allowV4Tail: true), all.count == 16 else { return nil }
            return all
        }
        guard let head = groups(halves[0], allowV4Tail: false), let tail = groups(halves[1], allowV4Tail: true),
              head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

/// The key every limit per client address counts a client under (the connection guard, the transit
/// relay's connections, pairs and waiting connections, the rendezvous's rates and holdings, the account
/// limiters): one client, one key, whatever limit it meets.
public enum ClientAddress {
    /// The limit key of `address` (IPv4 or IPv6 text, as a socket or `X-Forwarded-For` gives it): an IPv4
    /// address as it is (`192.0.2.7`); an IPv4-mapped IPv6 address as its IPv4 address; an IPv6 address by
    /// its /64, the network one subscriber is given and in which a host picks any address at will
    /// (`2001:db8:1:2::/64`); anything that is not an address (`?`) as it is.
    public static func limitKey(_ address: String) -> String {
        guard let (bytes, _) = IPNetwork.parseAddress(address) else { return address }
        if Array(bytes[0..<12]) == IPNetwork.mappedPrefix { return TrustedProxies.normalized(address) }
        let network = Array(bytes[0..<8]) + [UInt8](repeating: 0, count: 8)
        let text = stride(from: 0, to: 16, by: 2).map { String(UInt16(network[$0]) << 8 | UInt16(network[$0 + 1]), radix: 16) }
            .joined(separator: ":")
        return TrustedProxies.normalized(text) + "/64"
    }
}

/// The reverse proxies whose `X-Forwarded-For` the hub believes (`--trusted-proxy`, repeatable), and the
/// choice of a request's client address.
public struct TrustedProxies: Sendable, Hashable {
    /// The trusted networks (none by default: the header is never believed).
    public var networks: [IPNetwork]

    /// Trusts `networks`.
    public init(_ networks: [IPNetwork] = []) { self.networks = networks }

    /// The header a trusted proxy appends the address of its own client to.
    public static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    /// Whether `address` is a trusted proxy.
    public func contains(_ address: String) -> Bool {
        networks.contains { $0.contains(address) }
    }

    /// The client's address: `peer` (the connection's address) unless it is a trusted proxy and
    /// `forwardedFor` (the values of every `X-Forwarded-For` header, in order) names addresses: then the
    /// right-most one that is not itself a trusted proxy (or the left-most when all are). An entry may
    /// carry a port (`192.0.2.1:5678`, `[2001:db8::1]:443`, as some proxies write it): it is dropped. An
    /// entry that is not an address stops the walk: the peer's address is used (what lies beyond was never
    /// vouched for).
    public func clientAddress(peer: String, forwardedFor: [String]) -> String {
        let peer = Self.normalized(peer)
        guard !networks.isEmpty, contains(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        var chosen: String?
        for entry in hops.reversed().prefix(64) {
            guard let hop = Self.withoutPort(entry), IPNetwork.parseAddress(hop) != nil else { return chosen ?? peer }
            let address = Self.normalized(hop)
            chosen = address
            if !contains(address) { return address }
        }
        return chosen ?? peer
    }

    /// An `X-Forwarded-For` entry without its port: `a.b.c.d:PORT` is `a.b.c.d`, `[IPV6]:PORT` and
    /// `[IPV6]` are `IPV6`; anything else is returned as it is (a bare IPv6 address has colons of its
    /// own and no port). Nil for a port that is not 1 to 5 digits.
    static func withoutPort(_ entry: String) -> String? {
        if entry.hasPrefix("[") {
            guard let close = entry.firstIndex(of: "]") else { return entry }
            let rest = entry[entry.index(after: close)...]
            let inner = String(entry[entry.index(after: entry.startIndex)..<close])
            if rest.isEmpty { return inner }
            guard rest.hasPrefix(":"), Self.isPort(rest.dropFirst()) else { return nil }
            return inner
        }
        let colons = entry.filter { $0 == ":" }.count
        guard colons == 1, let colon = entry.firstIndex(of: ":") else { return entry }
        guard Self.isPort(entry[entry.index(after: colon)...]) else { return nil }
        return String(entry[..<colon])
    }

    private static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.count) && text.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// One text per address: IPv4-mapped IPv6 as IPv4, without brackets or zone; others unchanged.
    public static func normalized(_ address: String) -> String {
        guard let (bytes, _) = IPNetwork.parseAddress(address) else { return address }
        if Array(bytes[0..<12]) == IPNetwork.mappedPrefix { return bytes[12...].map(String.init).joined(separator: ".") }
        // RFC 5952: lower-case hex, no leading zeros, the longest run of two or more zero groups as "::".
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
        var best = (start: -1, length: 1), i = 0
        while i < 8 {
            var j = i
            while j < 8 && groups[j] == 0 { j += 1 }
            if j - i > best.length { best = (i, j - i) }
            i = j == i ? i + 1 : j
        }
        let text = groups.map { String($0, radix: 16) }
        guard best.start >= 0 else { return text.joined(separator: ":") }
        return text[..<best.start].joined(separator: ":") + "::" + text[(best.start + best.length)...].joined(separator: ":")
    }
}

extension TrustedProxies {
    /// The client's address of a request that came over `channel` with `headers`.
    func clientAddress(channel: any Channel, headers: HTTPFields) -> String {
        clientAddress(peer: channel.remoteAddress?.ipAddress ?? "?", forwardedFor: headers[values: Self.forwardedFor])
    }
}

/// Outermost: sets the request's client address (``HubRequestContext/remoteIP``) from a trusted proxy's
/// `X-Forwarded-For` (``TrustedProxies/clientAddress(peer:forwardedFor:)``); from anyone else the header
/// is ignored.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = HubRequestContext
    let proxies: TrustedProxies

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !proxies.networks.isEmpty else { return try await next(request, context) }
        var c = context
        c.remoteIP = proxies.clientAddress(peer: context.peerIP, forwardedFor: request.headers[values: TrustedProxies.forwardedFor])
        return try await next(request, c)
    }
}
