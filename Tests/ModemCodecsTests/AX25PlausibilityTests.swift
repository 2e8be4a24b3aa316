import Testing
import ModemTestSupport
import ModemCodecs

/// The bytes of a frame given as a monitor line.
private func bytes(_ line: String) throws -> [UInt8] {
    try AX25Frame(monitorLine: line).encode()
}

/// A frame from its parts (callsigns only, no SSIDs).
private func frame(control: UInt8, pid: UInt8?, info: [UInt8] = [], digipeaters: [String] = []) throws -> [UInt8] {
    AX25Frame(
        destination: try AX25Address(callsign: "APRS"), source: try AX25Address(callsign: "N0CALL", ssid: 7),
        digipeaters: try digipeaters.map { try AX25Address(callsign: $0) },
        control: control, pid: pid, info: info
    ).encode()
}

@Suite("AX.25 plausibility of repaired frames")
struct AX25PlausibilityTests {
    @Test("legal frames pass: APRS text, digipeater paths up to 8 with H bits in order, UTF-8, Mic-E bytes", arguments: [
        "N0CALL>APRS:hello world",
        "N0CALL-7>APZ123,WIDE1-1,WIDE2-2:!4237.14N/07120.83W>mobile",
        "K1ABC-15>APRS,RELAY*,WIDE2-1:>status",
        "K1ABC>CQ,D1*,D2*,D3*,D4,D5,D6,D7,D8:eight digipeaters, four repeated",
        "A1A>B1B,D1*,D2*,D3*,D4*,D5*,D6*,D7*,D8*:all repeated",
        "W1AW>T2SP0W,WIDE1-1:`c4Tl <0x1c>>/]\"4R}=",
        "DL1ABC>APRS:Grüße aus Köln, 20 °C",
        "N0CALL>APRS:line one<0x0d><0x0a>",
        "N0CALL>APRS:x",
    ])
    func legalText(line: String) throws {
        #expect(AX25Plausibility.problem(in: try bytes(line)) == nil, "\(line)")
    }

    @Test("legal control fields pass: I frames with any PID AX.25 assigns, S frames, U frames")
    func legalControl() throws {
        // I frames: every N(S), N(R), P; binary information (NET/ROM, IP).
        for control in stride(from: 0, through: 0xFE, by: 2).map(UInt8.init) {
            #expect(AX25Plausibility.problem(in: try frame(control: control, pid: 0xCF, info: [0x00, 0xFF, 0x80, 0x01])) == nil,
                    "I frame control \(control)")
        }
        for pid in AX25Plausibility.knownPIDs where pid != 0xF0 {
            #expect(AX25Plausibility.problem(in: try frame(control: 0x00, pid: pid, info: [0x45, 0x00, 0xFE])) == nil, "PID \(pid)")
        }
        // S frames: RR, RNR, REJ, SREJ with every N(R) and P/F.
        for nr in 0..<8 {
            for pf in [0, 0x10] {
                for type in [0x01, 0x05, 0x09, 0x0D] {
                    let control = UInt8(nr << 5 | pf | type)
                    #expect(AX25Plausibility.problem(in: try frame(control: control, pid: nil)) == nil, "S frame \(control)")
                }
            }
        }
        // U frames, with and without P/F.
        for (control, info) in [(0x2F, []), (0x6F, []), (0x43, []), (0x0F, []), (0x63, []), (0x87, [0x01, 0x02, 0x03]),
                                (0xAF, [0x82, 0x80, 0x00]), (0xE3, [0x00, 0x01, 0xFF])] as [(Int, [UInt8])] {
            for pf in [0, 0x10] {
                let c = UInt8(control | pf)
                #expect(AX25Plausibility.problem(in: try frame(control: c, pid: nil, info: info)) == nil, "U frame \(c)")
            }
        }
        // UI with P/F.
        #expect(AX25Plausibility.problem(in: try frame(control: 0x13, pid: 0xF0, info: Array("beacon".utf8))) == nil)
    }

    @Test("implausible bytes are rejected, each for its reason")
    func rejected() throws {
        let good = try bytes("N0CALL>APRS,WIDE1-1:hello")
        #expect(AX25Plausibility.problem(in: good) == nil)
        func with(_ index: Int, _ value: UInt8) -> [UInt8] {
            var b = good
            b[index] = value
            return b
        }
        // A lower-case letter in the destination.
        #expect(AX25Plausibility.problem(in: with(0, UInt8(ascii: "a") << 1)) == .malformed)
        // A reserved bit of the source SSID byte cleared.
        #expect(AX25Plausibility.problem(in: with(13, good[13] & ~0x20)) == .address)
        // Unknown U frame (0x07 is none of UI, SABM, SABME, DISC, DM, UA, FRMR, XID, TEST).
        #expect(AX25Plausibility.problem(in: with(21, 0x07)) == .control)
        // Unassigned PID.
        #expect(AX25Plausibility.problem(in: with(22, 0x55)) == .pid)
        // A control character, a lone UTF-8 lead byte and a lone continuation byte in text.
        #expect(AX25Plausibility.problem(in: with(23, 0x12)) == .info)
        #expect(AX25Plausibility.problem(in: with(23, 0xDA)) == .info)
        #expect(AX25Plausibility.problem(in: with(good.count - 1, 0xC3)) == .info)
        #expect(AX25Plausibility.problem(in: with(23, 0xB6)) == .info)
        // Text longer than 256 bytes.
        #expect(AX25Plausibility.problem(in: try frame(control: 0x03, pid: 0xF0, info: Array(repeating: 0x41, count: 257))) == .info)
        // A digipeater marked repeated after one that is not.
        // (A monitor line cannot say this: its `*` marks every digipeater before it too.)
        let outOfOrder = AX25Frame(
            destination: try AX25Address(callsign: "APRS"), source: try AX25Address(callsign: "N0CALL"),
            digipeaters: [try AX25Address(callsign: "WIDE1", ssid: 1), try AX25Address(callsign: "WIDE2", ssid: 1, highBit: true)],
            info: Array("x".utf8))
        #expect(AX25Plausibility.problem(in: outOfOrder.encode()) == .address)
        // An S frame or a SABM with an information field.
        #expect(AX25Plausibility.problem(in: try frame(control: 0x01, pid: nil) + [0x41]) == .control)
        #expect(AX25Plausibility.problem(in: try frame(control: 0x2F, pid: nil) + [0x41]) == .control)
        // Too short, not terminated.
        #expect(AX25Plausibility.problem(in: Array(good.prefix(14))) == .malformed)
    }

    @Test("random bytes are almost never plausible")
    func randomBytes() {
        var random = TestRandom(seed: 7)
        var plausible = 0
        for _ in 0..<20_000 {
            if AX25Plausibility.problem(in: random.bytes(Int.random(in: 16...120, using: &random))) == nil { plausible += 1 }
        }
        #expect(plausible == 0)
    }
}

/// The undetected-error rate of each repair level, measured: frames with three wrong NRZI line bits
/// (six wrong data bits, which no level can truly repair) are "repaired" anyway when some trial happens
/// to match the CRC. The CRC-16 generator has the factor x + 1, so it catches every odd number of wrong
/// bits: a trial whose flips make the total odd never passes, one that makes it even passes with
/// probability 1 / 32,768. Over damage of either parity that is 1 / 65,536 per trial.
@Suite("Repair levels: false FCS passes against the 16-bit CRC")
struct RepairFalseAcceptTests {
    /// A UI frame with a printable-text information field of `length` characters.
    static func textFrame(length: Int, using random: inout TestRandom) -> [UInt8] {
        let text = (0..<length).map { _ in UInt8.random(in: 0x20...0x7E, using: &random) }
        var frame = try! AX25Frame(monitorLine: "N0CALL-7>APRS,WIDE1-1:x")
        frame.info = text
        return frame.encode()
    }

    /// `count` damaged candidates of text frames: three separated line-bit errors each (two adjacent
    /// received bits), plus one lone wrong bit when `odd`, that leave the flags alone and the length in
    /// whole bytes.
    static func damaged(count: Int, infoLength: Int, seed: UInt64, odd: Bool = false) -> [(payload: [UInt8], candidate: HDLCFrameCandidate)] {
        var random = TestRandom(seed: seed)
        var out: [(payload: [UInt8], candidate: HDLCFrameCandidate)] = []
        while out.count < count {
            let payload = textFrame(length: infoLength, using: &random)
            var bits = HDLCEncoder.stuffedBits(of: payload + CRC16X25.fcsBytes(of: payload))
            var positions: Set<Int> = []
            while positions.count < 3 {
                let p = Int.random(in: 0..<(bits.count - 1), using: &random)
                if positions.allSatisfy({ abs($0 - p) > 24 }) { positions.insert(p) }
            }
            for p in positions { bits[p].toggle(); bits[p + 1].toggle() }
            if odd {
                let lone = Int.random(in: 0..<bits.count, using: &random)
                guard positions.allSatisfy({ abs($0 - lone) > 24 }) else { continue }
                bits[lone].toggle()
            }
            var decoder = HDLCDecoder()
            let outputs = decoder.decode(HDLCEncoder.flagBits + bits + HDLCEncoder.flagBits)
            guard outputs.count == 1, let candidate = outputs[0].candidate, !candidate.isMisaligned else { continue }
            out.append((payload, candidate))
        }
        return out
    }

    struct Tally: CustomStringConvertible {
        var frames = 0, trials = 0, passes = 0, decodable = 0, plausible = 0
        var perTrial: Double { Double(passes) / Double(trials) * 65536 }
        var description: String {
            "\(frames) frames, \(trials) trials, \(passes) false FCS passes (\(String(perTrial)) x 1/65536 per trial), "
                + "\(decodable) decode as AX.25, \(plausible) plausible"
        }
    }

    static func tally(_ items: [(payload: [UInt8], candidate: HDLCFrameCandidate)], trialsPerFrame: (Int) -> Int,
                      repair: (HDLCFrameCandidate, ([UInt8]) -> Bool) -> HDLCFrame?) -> Tally {
        var t = Tally()
        for (payload, candidate) in items {
            t.frames += 1
            t.trials += trialsPerFrame(candidate.rawBits.count)
            // Every FCS pass is seen by the acceptance test; count them all (returning false keeps searching).
            _ = repair(candidate) { bytes in
                guard bytes != payload else { return false }
                t.passes += 1
                if (try? AX25Frame(decoding: bytes)) != nil { t.decodable += 1 }
                if AX25Plausibility.problem(in: bytes) == nil { t.plausible += 1 }
                return false
            }
        }
        return t
    }

    @Test("one line bit (the receiver's level) and one data bit: n trials, 1 in 32,768 each when the parity matches, else none")
    func singleLevels() {
        let even = Self.damaged(count: 1500, infoLength: 80, seed: 41)
        let odd = Self.damaged(count: 1500, infoLength: 80, seed: 43, odd: true)
        let line = Self.tally(even, trialsPerFrame: { $0 }) { c, ok in c.repair(pattern: [0, 1], isAcceptable: ok) }
        let single = Self.tally(odd, trialsPerFrame: { $0 }) { c, ok in c.repair(maxBitFlips: 1, isAcceptable: ok) }
        let lineOdd = Self.tally(odd, trialsPerFrame: { $0 }) { c, ok in c.repair(pattern: [0, 1], isAcceptable: ok) }
        let singleEven = Self.tally(even, trialsPerFrame: { $0 }) { c, ok in c.repair(maxBitFlips: 1, isAcceptable: ok) }
        print("repair level one line bit, even damage:", line)
        print("repair level one data bit, odd damage:", single)
        print("repair level one line bit, odd damage:", lineOdd)
        print("repair level one data bit, even damage:", singleEven)
        for t in [line, single] {
            // 1500 frames of about 830 bits: about 38 expected.
            #expect(t.perTrial > 1 && t.perTrial < 3.5, "\(t)")
            // Most of them decode as AX.25 (what the receiver checked before); few are plausible.
            #expect(t.decodable * 10 >= t.passes * 4, "\(t)")
            #expect(t.plausible * 3 <= t.passes, "\(t)")
        }
        #expect(lineOdd.passes == 0 && singleEven.passes == 0)
    }

    @Test("limiting the positions tried: the true repair is found when its position is among them, never otherwise")
    func limitedPositions() {
        var random = TestRandom(seed: 44)
        var found = 0
        for _ in 0..<200 {
            let payload = Self.textFrame(length: 60, using: &random)
            var bits = HDLCEncoder.stuffedBits(of: payload + CRC16X25.fcsBytes(of: payload))
            let p = Int.random(in: 0..<(bits.count - 1), using: &random)
            bits[p].toggle()
            bits[p + 1].toggle()
            var decoder = HDLCDecoder()
            let outputs = decoder.decode(HDLCEncoder.flagBits + bits + HDLCEncoder.flagBits)
            guard outputs.count == 1, let candidate = outputs[0].candidate else { continue }
            let others = (0..<30).map { _ in Int.random(in: 0..<bits.count, using: &random) }.filter { abs($0 - p) > 1 }
            // The full search as the reference (it may find another pair first, or none at the frame's edges).
            let full = candidate.repair(pattern: [0, 1])
            guard full?.flippedBitIndices == [8 + p, 8 + p + 1] else { continue }
            let with = candidate.repair(pattern: [0, 1], positions: others + [p])
            #expect(with?.bytes == payload, "line bit \(p)")
            #expect(with?.flippedBitIndices == [8 + p, 8 + p + 1])
            let without = candidate.repair(pattern: [0, 1], positions: others)
            #expect(without == nil || without?.bytes != payload)
            if with?.bytes == payload { found += 1 }
        }
        #expect(found > 150)
    }

    @Test("all pairs (about n²/2 trials): a false pass on nearly every frame; plausibility cannot save that level")
    func allPairs() {
        let items = Self.damaged(count: 40, infoLength: 30, seed: 42)
        let pairs = Self.tally(items, trialsPerFrame: { $0 * ($0 + 1) / 2 }) { c, ok in c.repair(maxBitFlips: 2, isAcceptable: ok) }
        print("repair level any two bits:", pairs)
        // 40 frames of about 460 bits: about 106 000 trials each, some 3 false passes per frame.
        #expect(pairs.passes >= items.count, "\(pairs)")
        #expect(pairs.plausible > 0, "\(pairs)")
    }
}
