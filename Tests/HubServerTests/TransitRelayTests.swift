import Foundation
import HubServer
import ProcessTestSupport
import Testing

/// The magic-wormhole transit relay (`modem-hub serve --transit-listen`): its handshake and matching as
/// values, the built server driven by clients in another language (Tests/scripts/transit_relay.py,
/// Python's standard library only), and stock magic-wormhole clients sending files through it
/// (Tests/scripts/transit_wormhole.py, with the reference rendezvous server).
@Suite struct TransitRelayTests {
    static let token = String(repeating: "0123456789abcdef", count: 4)

    @Test func handshakeLines() {
        let good = TransitHandshake.parse(Array("please relay \(Self.token) for side 0011223344556677\n".utf8))
        #expect(good == TransitHandshake(token: Self.token, side: "0011223344556677"))
        #expect(TransitHandshake.parse(Array("please relay \(Self.token)\n".utf8)) == TransitHandshake(token: Self.token, side: nil))
        for bad in ["please relay \(Self.token) for side 0011223344556677",             // no newline
                    "please relay \(Self.token.uppercased())\n",                        // upper case
                    "please relay \(Self.token.dropLast())\n",                          // 63 digits
                    "please relay \(Self.token) for side 00112233\n",                   // short side
                    "please  relay \(Self.token)\n", "GET / HTTP/1.1\r\n", "\n",
                    "please relay \(Self.token) for side 0011223344556677 extra\n"] {
            #expect(TransitHandshake.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(TransitHandshake.parse([0xFF, 0x0A]) == nil)
        #expect(TransitHandshake.parse([UInt8](repeating: 0x61, count: 200) + [0x0A]) == nil)
    }

    @Test func matcherPairsOnTokenAndSide() {
        var m = TransitMatcher<Int>(maximumPending: 3, maximumPerAddress: 2)
        let a = TransitHandshake(token: Self.token, side: "a")
        let b = TransitHandshake(token: Self.token, side: "b")
        let other = TransitHandshake(token: String(Self.token.reversed()), side: "b")
        #expect(m.arrive(a, connection: 1, address: "x") == .waiting)
        #expect(m.arrive(a, connection: 2, address: "y") == .waiting)       // same side: never its own peer
        #expect(m.arrive(other, connection: 3, address: "y") == .waiting)   // another token
        #expect(m.pendingCount == 3)
        #expect(m.arrive(b, connection: 4, address: "z") == .paired(1))    // the first waiting one of the token
        #expect(m.pendingCount == 2)
        let left = m.leave(2, token: Self.token), again = m.leave(2, token: Self.token)
        #expect(left && !again)
        #expect(m.arrive(a, connection: 5, address: "y") == .waiting)
        // Limits: two waiting from y already (3 and 5); at most three in all.
        if case .refused = m.arrive(TransitHandshake(token: String(repeating: "f", count: 64), side: "c"), connection: 6, address: "y") {} else {
            Issue.record("a third waiting connection from one address was not refused")
        }
        #expect(m.arrive(TransitHandshake(token: String(repeating: "d", count: 64), side: "c"), connection: 8, address: "z") == .waiting)
        #expect(m.pendingCount == 3)
        if case .refused = m.arrive(TransitHandshake(token: String(repeating: "e", count: 64), side: "c"), connection: 7, address: "w") {} else {
            Issue.record("a fourth waiting connection was not refused")
        }
        // Older clients (no side) pair with anyone of the token.
        var old = TransitMatcher<Int>(maximumPending: 10, maximumPerAddress: 10)
        #expect(old.arrive(TransitHandshake(token: Self.token, side: nil), connection: 1, address: "x") == .waiting)
        #expect(old.arrive(TransitHandshake(token: Self.token, side: nil), connection: 2, address: "x") == .paired(1))
    }

    @Test("pairs are capped in all and per address; a pair of one address's own ends counts once against it")
    func pairCountsPerAddress() {
        var p = TransitPairCounts(maximumPairs: 5, maximumPerAddress: 2)
        #expect(p.join("127.0.0.2", "127.0.0.2") == nil)
        #expect(p.join("127.0.0.2", "192.0.2.1") == nil)
        #expect(p.pairs(of: "127.0.0.2") == 2 && p.pairs(of: "192.0.2.1") == 1)
        #expect(p.join("127.0.0.2", "127.0.0.2") != nil, "a third pair of 127.0.0.2")
        #expect(p.join("192.0.2.9", "127.0.0.2") != nil, "either end's address at its cap refuses the pair")
        #expect(p.active == 2, "refusals count nothing")
        #expect(p.join("127.0.0.1", "127.0.0.1") == nil, "127.0.0.1 is another client than 127.0.0.2")
        #expect(p.join(nil, nil) == nil && p.join(nil, "192.0.2.1") == nil, "trusted proxies are not counted per address")
        #expect(p.active == 5)
        #expect(p.join("198.51.100.1", "198.51.100.2") == .some("the relay carries 5 pairs"))
        p.end("127.0.0.2", "127.0.0.2")
        #expect(p.pairs(of: "127.0.0.2") == 1 && p.active == 4)
        #expect(p.join("127.0.0.2", "198.51.100.2") == nil)
    }

    /// Stock magic-wormhole 0.24's `bin` folder (``HubProcess/wormholeVenv``); throws naming it when missing.
    static func wormholeBin() throws -> String {
        URL(fileURLWithPath: try HubProcess.wormholeVenv.path()).deletingLastPathComponent().path
    }

    @Test(.requires(HubProcess.wormholeVenv, HubProcess.server), .timeLimit(.minutes(6)))
    func stockWormholeClientsThroughTheRelay() async throws {
        let bin = try Self.wormholeBin()
        let o = try await HubProcess.run(bin + "/python", [HubProcess.packageRoot + "/Tests/scripts/transit_wormhole.py",
                                                           bin, HubProcess.binary, "--files", "3"], timeout: 330)
        print(o.stdoutText.split(separator: "\n").suffix(5).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }

    /// Pairs relayed with splice(2) (the default on Linux), and through SwiftNIO (`--no-transit-splice`,
    /// what other systems and a relay short of descriptors for its pipes use).
    @Test(.requires(HubProcess.server), .timeLimit(.minutes(5)), arguments: [[], ["--serve-option=--no-transit-splice"]])
    func relayDrivenFromPython(options: [String]) async throws {
        let o = try await HubProcess.run("/usr/bin/env", ["python3", HubProcess.packageRoot + "/Tests/scripts/transit_relay.py",
                                                          HubProcess.binary, "--pairs", "200", "--size", "262144"] + options, timeout: 280)
        print(o.stdoutText.split(separator: "\n").suffix(4).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}
