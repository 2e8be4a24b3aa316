import Foundation
import ModemCrypto
@testable import ModemWormhole
import Testing

/// A TCP connection to 127.0.0.1:`port` from `source` (bound first: 127.0.0.2 is an attacker of its
/// own), made with a blocking connect: it is in the listener's queue when this returns.
func connectFrom(_ source: String, toLoopbackPort port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw WormholeError(.local, "socket") }
    func address(_ host: String, _ port: Int) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &a.sin_addr)
        return a
    }
    var from = address(source, 0), to = address("127.0.0.1", port)
    let bound = withUnsafePointer(to: &from) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    let connected = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard bound == 0, connected == 0 else { close(fd); throw WormholeError(.local, "connect from \(source): \(String(cString: strerror(errno)))") }
    return fd
}

func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var off = 0
    while off < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + off, bytes.count - off) }
        if n <= 0 { return }
        off += n
    }
}

/// The transit handshake (issue 32, defect 11): compared in constant time, and connections to our
/// listener that are not the peer (any number of them, wrong or silent) never stop the peer's
/// handshake from being answered. At da86752, after 32 connections no handshake was attempted.
/// The handshake's timeouts run on the wall clock (sockets and a 1-10 s deadline), so these run in the
/// real-time group, one test at a time: beside the modem group's CPU-bound tests on two cores, the
/// cooperative pool was starved for 45 s and the honest peer's handshake ran out of time.
@Suite struct TransitHandshakeRealTimeTests {
    static let key = [UInt8](repeating: 0x42, count: 32)

    /// A receiver listening; `attackers` connections from 127.0.0.2, each sending `junk` (nothing
    /// when nil), queued before the honest sender's from 127.0.0.1. Returns the route the receiver
    /// made, or its failure.
    func flood(attackers: Int, junk: [UInt8]?, handshakeTimeout: Double) async throws -> Result<TransitConnection, WormholeError> {
        let receiver = try TransitConnector(role: .receiver, transitKey: Self.key, relays: [], listen: true,
                                            handshakeTimeout: handshakeTimeout)
        let port = try #require(receiver.hints.direct.first?.port)
        var fds: [Int32] = []
        defer { for fd in fds { close(fd) } }
        for _ in 0..<attackers {
            let fd = try connectFrom("127.0.0.2", toLoopbackPort: port)
            if let junk { writeAll(fd, junk) }
            fds.append(fd)
        }
        // The honest sender: its handshake and `go` (a sender says it once its handshake is answered;
        // the receiver reads it only after answering).
        let honest = try connectFrom("127.0.0.1", toLoopbackPort: port)
        fds.append(honest)
        writeAll(honest, receiver.keys.senderHandshake + Array("go\n".utf8))
        do throws(WormholeError) {
            return .success(try await receiver.connect(to: TransitHints(), timeout: 20))
        } catch {
            return .failure(error)
        }
    }

    @Test("40 connections with a wrong handshake before the peer's: the peer's is still answered (real time)")
    func wrongHandshakesDoNotStopThePeer() async throws {
        var wrong = TransitKeys(key: Self.key).senderHandshake
        wrong[20] ^= 1
        let r = try await flood(attackers: 40, junk: wrong, handshakeTimeout: 10)
        guard case .success(let c) = r else { Issue.record("no connection: \(r)"); return }
        #expect(c.route.hasPrefix("direct from 127.0.0.1"), "\(c.route)")
        c.stream.close()
    }

    @Test("40 silent connections hold the 32 slots only until their handshake times out (real time)")
    func silentConnectionsTimeOut() async throws {
        let r = try await flood(attackers: 40, junk: nil, handshakeTimeout: 1)
        guard case .success(let c) = r else { Issue.record("no connection: \(r)"); return }
        #expect(c.route.hasPrefix("direct from 127.0.0.1"), "\(c.route)")
        c.stream.close()
    }

    /// The sender's handshake line crosses relays in the clear: a replay of it, never followed by
    /// `go`, held a listener slot until the whole attempt's deadline (a5978ce waited for `go` that
    /// long). Each replay now holds its slot only for the handshake timeout (1 s here), so the honest
    /// sender behind 40 of them connects well within the 20 s attempt; before, all 32 slots stayed
    /// taken for the 20 s and the attempt failed.
    @Test("40 replays of the sender's handshake without `go` hold the slots only for the handshake timeout (real time)")
    func replayedHandshakesTimeOut() async throws {
        let r = try await flood(attackers: 40, junk: TransitKeys(key: Self.key).senderHandshake, handshakeTimeout: 1)
        guard case .success(let c) = r else { Issue.record("no connection: \(r)"); return }
        #expect(c.route.hasPrefix("direct from 127.0.0.1"), "\(c.route)")
        c.stream.close()
    }

    @Test("a sender and a receiver with the same key connect; with different keys they do not (real time)")
    func keys() async throws {
        let receiver = try TransitConnector(role: .receiver, transitKey: Self.key, relays: [], listen: true)
        let sender = try TransitConnector(role: .sender, transitKey: Self.key, relays: [], listen: false)
        let port = try #require(receiver.hints.direct.first?.port)
        async let got = receiver.connect(to: TransitHints(), timeout: 20)
        let mine = try await sender.connect(to: TransitHints(direct: [TransitHint(host: "127.0.0.1", port: port)]), timeout: 20)
        let theirs = try await got
        #expect(!mine.relayed && !theirs.relayed)
        mine.stream.close(); theirs.stream.close()

        let other = try TransitConnector(role: .sender, transitKey: [UInt8](repeating: 0x43, count: 32), relays: [], listen: false)
        let receiver2 = try TransitConnector(role: .receiver, transitKey: Self.key, relays: [], listen: true)
        let port2 = try #require(receiver2.hints.direct.first?.port)
        let refused = Task { () async throws(WormholeError) -> TransitConnection in try await receiver2.connect(to: TransitHints(), timeout: 3) }
        await #expect(throws: WormholeError.self) {
            _ = try await other.connect(to: TransitHints(direct: [TransitHint(host: "127.0.0.1", port: port2)]), timeout: 3)
        }
        await #expect(throws: WormholeError.self) { _ = try await refused.value }
    }
}
