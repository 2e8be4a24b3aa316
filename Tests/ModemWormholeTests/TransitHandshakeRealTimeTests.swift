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

/// Two transit connectors on the real clock: they find each other with the same key, and not with
/// different keys. (The listener's handshake slots and timeouts are tested on a simulated clock:
/// TransitHandshakeTests.) Their deadlines (20 s, 3 s) are on the wall clock, so this runs in the
/// real-time group.
@Suite struct TransitHandshakeRealTimeTests {
    static let key = [UInt8](repeating: 0x42, count: 32)

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
