import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HubTestSupport
@testable import HubServer
import Testing

/// A plain TCP client for hostile connections: blocking calls with poll-based hang guards.
private final class RawClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { Glibc.close(fd); throw RawClientError("connect: \(String(cString: strerror(errno)))") }
    }

    deinit { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Everything the server sends until it closes the connection; nil when it is still open after
    /// `guardSeconds` (a hang guard far above the deadlines under test).
    func readUntilClosed(guardSeconds: Double) -> String? {
        read(until: { _ in false }, guardSeconds: guardSeconds).flatMap { $0.closed ? $0.text : nil }
    }

    /// What the server sent until `done` holds for it or the connection closed; nil after `guardSeconds`.
    func read(until done: (String) -> Bool, guardSeconds: Double) -> (text: String, closed: Bool)? {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let end = Date().addingTimeInterval(guardSeconds)
        while Date() < end {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(max(1, end.timeIntervalSinceNow * 1000)))
            if ready <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (String(decoding: out, as: UTF8.self), true) }
            out += buffer[0..<n]
            let text = String(decoding: out, as: UTF8.self)
            if done(text) { return (text, false) }
        }
        return nil
    }
}

struct RawClientError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// The connection guard (connection exhaustion without logging in): bad heads are answered and closed,
/// heads that never finish and idle connections are closed at their deadlines, the hub keeps answering.
/// Real time: the deadlines are the hub's own (1 s for a head), so a test beside busy groups could see
/// its probe closed before the hub read it (CI once did); it runs with the hub's real-time group.
@Suite("hub connection guard (real time)", .serialized)
struct ConnectionGuardRealTimeTests {
    /// Runs `body` against a live hub with short deadlines (head 1 s, idle 1.5 s), stopped afterwards.
    static func withHub(_ body: (LiveHub) async throws -> Void) async throws {
        let hub = try await LiveHub.start(connections: limits)
        do {
            try await body(hub)
        } catch {
            await hub.stop()
            throw error
        }
        await hub.stop()
    }

    static var limits: ConnectionLimits {
        var l = ConnectionLimits()
        l.headTimeout = 1
        l.idleTimeout = 1.5
        return l
    }

    @Test("a bad request line, HTTP/0.9, garbage: 400 and a close; a 100 KB header: 431 and a close")
    func badHeadsAreAnsweredAndClosed() async throws {
        try await Self.withHub { hub in
            for (request, status) in [("FOO / HTTP/1.1\r\n\r\n", "400"), ("GET /\r\n\r\n", "400"), ("\u{1}\u{2}garbage\r\n\r\n", "400"),
                                      ("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 100_000))\r\n\r\n", "431")] {
                let c = try RawClient(port: hub.port)
                c.send(request)
                let answer = try #require(c.readUntilClosed(guardSeconds: 30), "\(request.prefix(20)): still open after 30 s")
                #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(request.prefix(20)): \(answer.prefix(80))")
                #expect(answer.contains("Connection: close"), "\(answer.prefix(200))")
            }
            #expect(hub.connectionCounts.snapshot.badHeads == 4)
        }
    }

    @Test("idle sockets and slowloris heads (a byte at a time) are closed at the head deadline while the hub keeps answering")
    func idleAndSlowConnectionsAreClosed() async throws {
        try await Self.withHub { hub in
            let idle = try (0..<200).map { _ in try RawClient(port: hub.port) }
            let slow = try (0..<20).map { _ in try RawClient(port: hub.port) }
            for c in slow { c.send("GET /.well-known/oauth-authorization-server HTTP/1.1\r\n") }
            // The hub answers others meanwhile (timed by Benchmarks/hub-connection-flood.py, not here).
            let probe = try RawClient(port: hub.port)
            probe.send("GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let answer = try #require(probe.readUntilClosed(guardSeconds: 30))
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(80))")
            // A byte now and then does not keep a head alive: every flood socket is closed by the hub.
            for c in slow { c.send("H") }
            for c in idle + slow {
                #expect(c.readUntilClosed(guardSeconds: 30) == "", "a flood socket got an answer or stayed open past 30 s")
            }
            #expect(hub.connectionCounts.snapshot.headTimeouts >= 220, "\(hub.connectionCounts.snapshot)")
        }
    }

    @Test("a kept-alive connection: closed after the idle deadline; the next head gets its own deadline")
    func keepAliveDeadlines() async throws {
        try await Self.withHub { hub in
            let request = "GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: x\r\n\r\n"
            // One answered request, then silence: closed (the answer arrived first).
            let quiet = try RawClient(port: hub.port)
            quiet.send(request)
            let answered = try #require(quiet.readUntilClosed(guardSeconds: 30))
            #expect(answered.hasPrefix("HTTP/1.1 200 ") && answered.components(separatedBy: "HTTP/1.1 ").count == 2, "\(answered.prefix(80))")
            #expect(hub.connectionCounts.snapshot.idleTimeouts >= 1, "\(hub.connectionCounts.snapshot)")
            // One answered request, then the start of a head that never ends: closed at that head's deadline.
            let slow = try RawClient(port: hub.port)
            slow.send(request)
            let first = try #require(slow.read(until: { $0.hasSuffix("}") }, guardSeconds: 30), "no answer within 30 s")
            #expect(!first.closed && first.text.hasPrefix("HTTP/1.1 200 "), "\(first.text.prefix(80))")
            let headTimeouts = hub.connectionCounts.snapshot.headTimeouts
            slow.send("GET / HTTP/1.1\r\nHost: x\r\n")
            #expect(slow.readUntilClosed(guardSeconds: 30) == "", "still open 30 s after a head was started")
            #expect(hub.connectionCounts.snapshot.headTimeouts == headTimeouts + 1, "\(hub.connectionCounts.snapshot)")
        }
    }

    @Test("caps: connections over the total or over one remote address's share are refused; every address counts, loopback too")
    func caps() {
        var limits = ConnectionLimits()
        limits.maximumConnections = 3
        limits.maximumPerAddress = 2
        let counts = ConnectionCounts(limits: limits)
        #expect(counts.admit("192.0.2.1") && counts.admit("192.0.2.1"))
        #expect(!counts.admit("192.0.2.1"), "a third from one address")
        #expect(counts.admit(nil), "a trusted proxy: only the total counts")
        #expect(!counts.admit("192.0.2.2"), "over the total")
        counts.release("192.0.2.1")
        #expect(counts.admit("192.0.2.2"))
        #expect(counts.snapshot.open == 3 && counts.snapshot.refused == 2)
        #expect(ConnectionLimits().effectiveMaximumConnections >= 16)
    }

    @Test("per-address keys: loopback addresses are clients like any other; only a trusted proxy is not capped per address")
    func perAddressKeys() {
        var limits = ConnectionLimits()
        limits.maximumPerAddress = 2
        let counts = ConnectionCounts(limits: limits, trustedProxies: TrustedProxies([IPNetwork("10.0.0.0/8")!]))
        #expect(counts.perAddressKey("127.0.0.1") == "127.0.0.1")
        #expect(counts.perAddressKey("127.0.0.2") == "127.0.0.2")
        #expect(counts.perAddressKey("::1") == "::/64", "IPv6 by its /64 (ClientAddress.limitKey)")
        #expect(counts.perAddressKey("::ffff:127.0.0.1") == "127.0.0.1", "an IPv4-mapped address is its IPv4 address")
        #expect(counts.perAddressKey("10.1.2.3") == nil, "a trusted proxy")
        // 127.0.0.2 at its cap does not touch 127.0.0.1's share.
        let k2 = counts.perAddressKey("127.0.0.2"), k1 = counts.perAddressKey("127.0.0.1")
        #expect(counts.admit(k2) && counts.admit(k2) && !counts.admit(k2))
        #expect(counts.admit(k1))
        // Many connections of a trusted proxy: counted in all only.
        #expect((0..<10).allSatisfy { _ in counts.admit(counts.perAddressKey("10.9.9.9")) })
    }

    @Test("one limit key per client: IPv4 as it is, IPv4-mapped as IPv4, IPv6 by its /64; account limits use the same")
    func limitKeys() {
        #expect(ClientAddress.limitKey("127.0.0.2") == "127.0.0.2")
        #expect(ClientAddress.limitKey("::ffff:10.0.0.1") == "10.0.0.1")
        #expect(ClientAddress.limitKey("[::FFFF:10.0.0.1]") == "10.0.0.1")
        #expect(ClientAddress.limitKey("2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(ClientAddress.limitKey("2001:DB8:1:2:ffff:eeee:dddd:cccc") == "2001:db8:1:2::/64")
        #expect(ClientAddress.limitKey("2001:db8:1:3::1") == "2001:db8:1:3::/64")
        #expect(ClientAddress.limitKey("2001:db8::7") == "2001:db8::/64")
        #expect(ClientAddress.limitKey("fe80::1%eth0") == "fe80::/64")
        #expect(ClientAddress.limitKey("::1") == "::/64")
        #expect(ClientAddress.limitKey("?") == "?")
        let key = ClientAddress.limitKey("2001:db8:1:2::1")
        #expect(ClientAddress.limitKey(key) == key, "a key is its own key")
        for a in ["127.0.0.2", "::ffff:10.0.0.1", "2001:db8:1:2::1", "2001:db8:9::abcd", "?"] {
            #expect(AccountLimiter.addressKey(a) == ClientAddress.limitKey(a), "\(a)")
        }
    }

    @Test("two addresses of one IPv6 /64 are one client to the connection caps (HTTP and transit); other /64s are not")
    func oneSlash64IsOneClient() {
        var limits = ConnectionLimits()
        limits.maximumPerAddress = 2
        let counts = ConnectionCounts(limits: limits)
        let a = counts.perAddressKey("2001:db8:1:2::1"), b = counts.perAddressKey("2001:db8:1:2:abcd::9")
        #expect(a == b)
        #expect(counts.admit(a) && counts.admit(b))
        #expect(!counts.admit(counts.perAddressKey("2001:db8:1:2::3")), "a third address of the /64: over its share")
        #expect(counts.admit(counts.perAddressKey("2001:db8:1:3::1")), "the next /64 is another client")
        // A trusted IPv6 proxy is still not capped per address.
        let proxied = ConnectionCounts(limits: limits, trustedProxies: TrustedProxies([IPNetwork("2001:db8:1:2::5/128")!]))
        #expect(proxied.perAddressKey("2001:db8:1:2::5") == nil && proxied.perAddressKey("2001:db8:1:2::6") == "2001:db8:1:2::/64")
    }

    @Test("X-Forwarded-For entries with a port (`1.2.3.4:567`, `[2001:db8::1]:443`) name their address")
    func forwardedForWithPorts() {
        let p = TrustedProxies([IPNetwork("10.0.0.0/8")!])
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["203.0.113.9:5678"]) == "203.0.113.9")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["[2001:db8::1]:443"]) == "2001:db8::1")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["[2001:db8::1]"]) == "2001:db8::1")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["2001:db8::1"]) == "2001:db8::1", "a bare IPv6 address: no port")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["198.51.100.1:1, 203.0.113.9:443, 10.0.0.7:80"]) == "203.0.113.9",
                "the walk passes trusted hops with ports")
        // Not a port: the walk stops, as for any entry that is not an address.
        for bad in ["203.0.113.9:", "203.0.113.9:http", "203.0.113.9:123456", "[2001:db8::1]:", "[2001:db8::1]x", "[2001:db8::1]:44x"] {
            #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: [bad]) == "10.0.0.5", "\(bad)")
        }
    }

    @Test("CIDR networks: IPv4 and IPv6, prefixes, single addresses, and what is not one")
    func networks() throws {
        let v4 = try #require(IPNetwork("192.0.2.0/24"))
        #expect(v4.contains("192.0.2.77") && !v4.contains("192.0.3.1") && v4.contains("::ffff:192.0.2.1"))
        #expect(try #require(IPNetwork("10.0.0.0/8")).contains("10.255.1.2"))
        #expect(try #require(IPNetwork("0.0.0.0/0")).contains("203.0.113.9"))
        #expect(!(try #require(IPNetwork("0.0.0.0/0")).contains("2001:db8::1")), "an IPv4 network holds no IPv6 address")
        let one = try #require(IPNetwork("127.0.0.1"))
        #expect(one.contains("127.0.0.1") && !one.contains("127.0.0.2"))
        let v6 = try #require(IPNetwork("2001:db8::/32"))
        #expect(v6.contains("2001:db8:ffff::1") && v6.contains("[2001:DB8::5]") && !v6.contains("2001:db9::1") && !v6.contains("192.0.2.1"))
        #expect(try #require(IPNetwork("::1/128")).contains("::1"))
        #expect(try #require(IPNetwork("fe80::/10")).contains("fe80::1%eth0"))
        #expect(try #require(IPNetwork("::ffff:0:0/96")).contains("198.51.100.1"))
        for bad in ["", "192.0.2.0/33", "192.0.2/24", "256.0.0.1", "1.2.3.4/-1", "2001:db8::/129", "2001:db8:::1", "1::2::3",
                    "gggg::1", "1.2.3.4/8x", "example.org", "1.2.3.04444", "1:2:3:4:5:6:7:8:9"] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
        #expect(TrustedProxies.normalized("2001:0DB8:0:0:0:0:0:1") == "2001:db8::1")
        #expect(TrustedProxies.normalized("[::ffff:10.0.0.1]") == "10.0.0.1")
        #expect(TrustedProxies.normalized("2001:db8:0:1:0:0:0:0") == "2001:db8:0:1::")
    }

    @Test("X-Forwarded-For: believed from a trusted proxy only; the right-most address that is not a trusted proxy")
    func forwardedForChoice() {
        let none = TrustedProxies()
        #expect(none.clientAddress(peer: "198.51.100.1", forwardedFor: ["203.0.113.9"]) == "198.51.100.1", "no proxy trusted: ignored")
        let p = TrustedProxies([IPNetwork("10.0.0.0/8")!, IPNetwork("2001:db8:1::/48")!])
        // From an untrusted peer the header is ignored, whatever it says.
        #expect(p.clientAddress(peer: "198.51.100.1", forwardedFor: ["10.0.0.1"]) == "198.51.100.1")
        #expect(p.clientAddress(peer: "127.0.0.2", forwardedFor: ["203.0.113.9"]) == "127.0.0.2")
        // From a trusted proxy: the right-most entry that is not itself a trusted proxy.
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["203.0.113.9"]) == "203.0.113.9")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["1.1.1.1, 203.0.113.9, 10.0.0.7"]) == "203.0.113.9",
                "the client's own forged entries (left) are not believed")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["1.1.1.1", "203.0.113.9,10.2.0.1"]) == "203.0.113.9", "several headers, in order")
        #expect(p.clientAddress(peer: "2001:db8:1::9", forwardedFor: ["2001:DB8:2::1"]) == "2001:db8:2::1")
        #expect(p.clientAddress(peer: "::ffff:10.0.0.5", forwardedFor: ["203.0.113.9"]) == "203.0.113.9", "an IPv4-mapped peer")
        // Every entry a trusted proxy: the left-most; no header or an empty one: the proxy itself.
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["10.0.0.9, 10.0.0.8"]) == "10.0.0.9")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: []) == "10.0.0.5")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: [" , "]) == "10.0.0.5")
        // An entry that is not an address stops the walk: what lies beyond it was never vouched for.
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["203.0.113.9, unknown"]) == "10.0.0.5")
        #expect(p.clientAddress(peer: "10.0.0.5", forwardedFor: ["unknown, 203.0.113.9"]) == "203.0.113.9")
    }
}
