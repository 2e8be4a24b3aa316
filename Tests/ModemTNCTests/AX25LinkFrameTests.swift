import Testing
import ModemCodecs
import ModemRuntime
@testable import ModemTNC

@Suite("AX25Link frames and XID")
struct AX25LinkFrameTests {
    typealias F = AX25LinkFrame
    static let a = AX25LinkFixtures.a, b = AX25LinkFixtures.b

    static func kinds(_ modulo: AX25Modulo) -> [F.Kind] {
        let top = modulo.rawValue - 1
        var kinds: [F.Kind] = [
            .information(ns: 0, nr: top, pid: 0xF0, info: Array("hello".utf8)),
            .information(ns: top, nr: 1, pid: 0xCF, info: []),
        ]
        for s in F.Supervisory.allCases { kinds.append(.supervisory(s, nr: top / 2, info: [])) }
        kinds.append(.supervisory(.srej, nr: 3, info: modulo == .eight ? [4 << 5] : [9 << 1]))
        for u in F.Unnumbered.allCases {
            let info: [UInt8] = [.frmr, .xid, .test, .ui].contains(u) ? [1, 2, 3] : []
            kinds.append(.unnumbered(u, pid: u == .ui ? 0xF0 : nil, info: info))
        }
        return kinds
    }

    @Test("Every frame type encodes and decodes back, modulo 8 and 128, command and response, P/F both ways",
          arguments: [AX25Modulo.eight, .oneTwentyEight])
    func roundTrip(modulo: AX25Modulo) throws {
        let digi = AX25LinkFixtures.call("WIDE1-1")
        for kind in Self.kinds(modulo) {
            for cr in [F.CommandResponse.command, .response] {
                for pf in [false, true] {
                    let frame = F(destination: Self.b, source: Self.a, digipeaters: [digi], commandResponse: cr, pollFinal: pf,
                                  kind: kind, modulo: modulo)
                    let back = try F(decoding: frame.encode(), modulo: modulo)
                    #expect(back == frame, "\(frame.summary)")
                }
            }
        }
    }

    @Test("Control fields are laid out as the specification says")
    func controlBytes() {
        func control(_ kind: F.Kind, _ modulo: AX25Modulo, pf: Bool = false) -> [UInt8] {
            let bytes = F(destination: Self.b, source: Self.a, commandResponse: .command, pollFinal: pf, kind: kind, modulo: modulo).encode()
            return Array(bytes[14..<(modulo == .eight ? 15 : 16)])
        }
        #expect(control(.information(ns: 2, nr: 5, pid: 0xF0, info: []), .eight, pf: true) == [0xB4])
        #expect(control(.information(ns: 100, nr: 27, pid: 0xF0, info: []), .oneTwentyEight, pf: true) == [200, 55])
        #expect(control(.supervisory(.rej, nr: 3, info: []), .eight) == [0x69])
        #expect(control(.supervisory(.rnr, nr: 64, info: []), .oneTwentyEight, pf: true) == [0x05, 0x81])
        #expect(control(.unnumbered(.sabme, pid: nil, info: []), .eight, pf: true) == [0x7F])
        #expect(control(.unnumbered(.sabm, pid: nil, info: []), .eight, pf: true) == [0x3F])
        #expect(control(.unnumbered(.ua, pid: nil, info: []), .eight, pf: true) == [0x73])
        // C bits: command sets the destination's, response the source's.
        let cmd = F(destination: Self.b, source: Self.a, commandResponse: .command, pollFinal: false, kind: .unnumbered(.disc, pid: nil, info: [])).encode()
        #expect(cmd[6] & 0x80 != 0 && cmd[13] & 0x80 == 0)
        let res = F(destination: Self.b, source: Self.a, commandResponse: .response, pollFinal: false, kind: .unnumbered(.dm, pid: nil, info: [])).encode()
        #expect(res[6] & 0x80 == 0 && res[13] & 0x80 != 0)
    }

    @Test("Malformed frames are typed errors naming the problem")
    func errors() {
        let sabm = F(destination: Self.b, source: Self.a, commandResponse: .command, pollFinal: true,
                     kind: .unnumbered(.sabm, pid: nil, info: [])).encode()
        func kind(_ bytes: [UInt8], _ modulo: AX25Modulo = .eight) -> AX25LinkFrameError.Kind? {
            do { _ = try F(decoding: bytes, modulo: modulo); return nil } catch { return error.kind }
        }
        #expect(kind([]) == .badAddress)
        #expect(kind(Array(sabm.prefix(10))) == .badAddress)
        #expect(kind(Array(sabm.prefix(14))) == .missingControl)
        #expect(kind(sabm + [0x41]) == .unexpectedInformation)
        #expect(kind(Array(sabm.prefix(14)) + [0xFF]) == .unknownControl)
        #expect(kind(Array(sabm.prefix(14)) + [0x00]) == .missingPID)
        #expect(kind(Array(sabm.prefix(14)) + [0x01], .oneTwentyEight) == .missingControl)
        #expect(kind(Array(sabm.prefix(14)) + [0x01, 0x02, 0x41]) == .unexpectedInformation)
    }

    @Test("Random bytes, truncations and bit flips of valid frames never trap", arguments: [UInt64(1), 2, 3])
    func garbage(seed: UInt64) {
        var g = SplitMix64(seed: seed)
        var valid: [[UInt8]] = []
        for modulo in [AX25Modulo.eight, .oneTwentyEight] {
            for kind in Self.kinds(modulo) {
                valid.append(F(destination: Self.b, source: Self.a, commandResponse: .command, pollFinal: true, kind: kind, modulo: modulo).encode())
            }
        }
        var inputs: [[UInt8]] = []
        for v in valid {
            for n in 0...v.count { inputs.append(Array(v.prefix(n))) }
            for _ in 0..<20 {
                var w = v
                w[Int(g.next() % UInt64(w.count))] ^= UInt8(1 << (g.next() % 8))
                inputs.append(w)
            }
        }
        for _ in 0..<500 { inputs.append(g.bytes(Int(g.next() % 80))) }
        var station = AX25LinkStation()
        station.register(Self.b)
        for (i, input) in inputs.enumerated() {
            _ = try? F(decoding: input, modulo: .eight)
            _ = try? F(decoding: input, modulo: .oneTwentyEight)
            _ = try? AX25XID(decoding: input)
            _ = station.received(input, now: Double(i))
            _ = station.advance(to: Double(i))
        }
        #expect(station.links.count <= AX25LinkParameters().maxLinks)
    }

    @Test("XID: the specification's example (Dire Wolf's corrected Figure 4.6) decodes; our encoding round-trips")
    func xid() throws {
        let example: [UInt8] = [0x82, 0x80, 0x00, 0x17, 0x02, 0x02, 0x21, 0x00, 0x03, 0x03, 0x86, 0xA8, 0x02,
                                0x06, 0x02, 0x04, 0x00, 0x08, 0x01, 0x02, 0x09, 0x02, 0x10, 0x00, 0x0A, 0x01, 0x03]
        let x = try AX25XID(decoding: example)
        #expect(x.fullDuplex == false)
        #expect(x.reject == [.rej, .srej])
        #expect(x.modulo == .oneTwentyEight)
        #expect(x.iFieldLengthRx == 128)
        #expect(x.windowSizeRx == 2)
        #expect(x.ackTimerMilliseconds == 4096)
        #expect(x.retries == 3)
        let ours = AX25XID(fullDuplex: false, reject: [.rej, .srej, .multiSREJ], modulo: .oneTwentyEight, iFieldLengthRx: 256,
                           windowSizeRx: 32, ackTimerMilliseconds: 3000, retries: 10)
        let encoded = ours.encode()
        #expect(encoded.count == 27)
        #expect(try AX25XID(decoding: encoded) == ours)
        // Unknown parameters are skipped; a truncated field keeps what came before; empty is no parameters.
        var extra = [0x82, 0x80, 0x00, 0x07, 0x63, 0x02, 0xAA, 0xBB] + [0x08, 0x01, 0x05] as [UInt8]
        extra[3] = UInt8(extra.count - 4)
        #expect(try AX25XID(decoding: extra).windowSizeRx == 5)
        #expect(try AX25XID(decoding: Array(encoded.prefix(20))).iFieldLengthRx == 256)
        #expect(try AX25XID(decoding: []) == AX25XID())
        #expect(throws: AX25XID.DecodeError.notParameterNegotiation) { try AX25XID(decoding: [0x81, 0x80, 0, 0]) }
    }
}
