import ModemCodecs

/// Targets for ModemCodecs: the single-step decoders that take bits and bytes off the air or a line.
enum CodecFuzzTargets {
    static let all: [FuzzTarget] = [uart, baudot, hdlc, il2p, ax25, ax25Monitor, kiss, linkFrame]

    /// A few AX.25 frames made with the encoder: UI with text, with digipeaters, an S frame.
    static func sampleAX25Frames() -> [AX25Frame] {
        do {
            let dest = try AX25Address(callsign: "APRS")
            let src = try AX25Address(callsign: "N0CALL", ssid: 7)
            let digi = try AX25Address(callsign: "WIDE1", ssid: 1, highBit: true)
            return [
                AX25Frame(destination: dest, source: src, info: Array("!4903.50N/07201.75W-Test".utf8)),
                AX25Frame(destination: dest, source: src, digipeaters: [digi, try AX25Address(callsign: "WIDE2", ssid: 2)],
                          info: [0x00, 0x7F, 0x80, 0xFF, 0x0D, 0x0A]),
                AX25Frame(destination: dest, source: src, control: 0x01, pid: nil),
            ]
        } catch {
            preconditionFailure("sample AX.25 addresses: \(error)")
        }
    }

    // MARK: UART

    static let parities: [UARTParity] = [.none, .even, .odd, .mark, .space]

    /// The framing chosen by one byte of input.
    static func framing(_ b: UInt8) -> UARTFraming {
        do {
            return try UARTFraming(dataBits: 5 + Int(b & 3), parity: parities[Int(b >> 2) % 5], stopBits: [1, 1.5, 2][Int(b >> 5) % 3])
        } catch {
            preconditionFailure("fuzz framing: \(error)")
        }
    }

    /// Byte 0 picks the framing; then each 2 bytes are one character's data and parity bits (bit 15:
    /// the stop bit), as the demodulator hands them over. The rest as text goes to the framing parser.
    static let uart = FuzzTarget(
        name: "uart",
        summary: "UARTDecoder (characters' data, parity and stop bits) and UARTFraming(parsing:)",
        seeds: {
            var out: [(name: String, bytes: [UInt8])] = []
            for (k, f) in [(0x03 as UInt8, "8N1"), (0x06, "7E1"), (0x28, "5N1.5")] {
                let framing = framing(k)
                let enc = UARTEncoder(framing: framing)
                var bytes: [UInt8] = [k]
                for c in "Hello, modem! 0123".utf8 {
                    let v = UInt16(truncatingIfNeeded: enc.encode(c) >> 1) | 0x8000
                    bytes += [UInt8(v & 0xFF), UInt8(v >> 8)]
                }
                out.append((name: "chars-\(f)", bytes: bytes))
            }
            out.append((name: "framing-text", bytes: [0x03] + Array(" 7e2 ".utf8)))
            return out
        },
        run: { input in
            guard let first = input.first else { return }
            let framing = framing(first)
            let decoder = UARTDecoder(framing: framing)
            let encoder = UARTEncoder(framing: framing)
            let width = UInt32(framing.dataBits + (framing.parity != .none ? 1 : 0))
            var i = 1
            while i + 1 < input.count {
                let v = UInt16(input[i]) | UInt16(input[i + 1]) << 8
                let c = decoder.decode(dataAndParity: UInt32(v & 0x7FFF), stopBit: v & 0x8000 != 0)
                if c.parityOK {
                    // A character that passes its parity check is exactly what the encoder sends for it.
                    let sent = encoder.encode(c.byte) >> 1
                    precondition(sent == UInt32(v) & ((1 << width) - 1), "UART: a character passed parity but encodes differently")
                }
                i += 2
            }
            _ = try? UARTFraming(parsing: String(decoding: input.dropFirst(), as: UTF8.self))
        }
    )

    // MARK: Baudot

    /// Each byte is one received 5-bit code (bits above the low 5 are ignored by the decoder).
    static let baudot = FuzzTarget(
        name: "baudot",
        summary: "BaudotDecoder (ITA2 codes with letters/figures shifts)",
        seeds: {
            var enc = BaudotEncoder()
            let codes = "RYRYRY THE QUICK BROWN FOX 0123456789 -?:$!&#'()".utf8.flatMap { enc.encode($0) }
            return [(name: "text", bytes: codes)]
        },
        run: { input in
            var decoder = BaudotDecoder()
            for code in input {
                if let ascii = decoder.decode(code) {
                    precondition(ascii < 0x80, "Baudot: a code decoded to a byte that is not ASCII")
                }
            }
        }
    )

    // MARK: IL2P

    /// The input's bits (LSB first) are line bits, as the demodulator gives them to ``IL2PDecoder``: sync
    /// words of either polarity, headers and payload blocks corrected by Reed-Solomon, AX.25 frames out.
    /// Byte 0 picks the confidence pattern (0: none; else every n-th bit doubted), so the small codes'
    /// check and the erasures run too.
    static let il2p = FuzzTarget(
        name: "il2p",
        summary: "IL2PDecoder (sync, header, payload blocks, erasures), IL2PFrameMapping, AX.25 decoding of what comes out",
        seeds: {
            var out: [(name: String, bytes: [UInt8])] = []
            for fec in [true, false] {
                var bits: [Bool] = []
                IL2PEncoder.appendPreamble(2, to: &bits)
                for frame in sampleAX25Frames() { IL2PEncoder(maximumFEC: fec).append(frame.encode(), to: &bits) }
                out.append((name: fec ? "frames-max-fec" : "frames", bytes: [0] + FuzzChunks.bytes(bits)))
                var damaged = bits
                for k in stride(from: 60, to: 400, by: 37) { damaged[k].toggle() }
                out.append((name: fec ? "damaged-max-fec" : "damaged", bytes: [5] + FuzzChunks.bytes(damaged.map { !$0 })))
            }
            return out
        },
        run: { input in
            guard let first = input.first else { return }
            var decoder = IL2PDecoder()
            for (i, bit) in FuzzChunks.bits(input.dropFirst()).enumerated() {
                let confidence: Float = first != 0 && i % Int(first) == 0 ? 0.1 : 0.9
                guard let r = decoder.decode(bit, confidence: confidence, stamp: i) else { continue }
                // Every header's 13 bytes map to its fields and back.
                precondition(IL2PHeader(bytes: r.header.bytes) == r.header, "IL2P: a header does not map back to its bytes")
                if let frame = r.frame {
                    precondition(frame.count >= 15, "IL2P: a frame shorter than AX.25's 15 bytes came out")
                    _ = try? AX25Frame(decoding: frame, strictCallsigns: false)
                }
            }
        }
    )

    // MARK: HDLC

    /// The input's bits (LSB first) are NRZI line levels, as the demodulator gives them: NRZI decoding,
    /// HDLC de-stuffing and flags, CRC-guided repair of damaged frames (one wrong NRZI line bit, or one
    /// wrong G3RUH line bit when byte 0's top bit is set), then AX.25 decoding, as PacketReceiver does.
    static let hdlc = FuzzTarget(
        name: "hdlc",
        summary: "NRZIDecoder, HDLCDecoder, HDLCFrameCandidate.repair and AX.25 decoding of what comes out",
        seeds: {
            var out: [(name: String, bytes: [UInt8])] = []
            let frames = sampleAX25Frames().map { $0.encode() }
            var nrzi = NRZIEncoder()
            let bits = nrzi.encode(HDLCEncoder(leadingFlags: 2, trailingFlags: 2).encode(frames: frames))
            out.append((name: "frames", bytes: FuzzChunks.bytes(bits)))
            var damaged = bits
            damaged[60] .toggle()
            damaged[61].toggle()
            out.append((name: "damaged", bytes: FuzzChunks.bytes(damaged)))
            return out
        },
        run: { input in
            guard let first = input.first else { return }
            let pattern = first & 0x80 != 0 ? [0, 1, 12, 13, 17, 18] : [0, 1]
            var nrzi = NRZIDecoder()
            var decoder = HDLCDecoder(minimumLength: HDLCDecoder.ax25MinimumLength, maximumLength: 400)
            for level in FuzzChunks.bits(input.dropFirst()) {
                switch decoder.decode(nrzi.decode(level)) {
                case .frame(let frame)?:
                    _ = try? AX25Frame(decoding: frame.bytes, strictCallsigns: false)
                case .damaged(let candidate)?:
                    // PacketReceiver tries the 32 least confident bits; here, every 7th.
                    let positions = Array(stride(from: 0, to: candidate.rawBits.count, by: 7).prefix(32))
                    let fixed = candidate.repair(pattern: pattern, exhaustive: true, positions: positions) { bytes in
                        AX25Plausibility.problem(in: bytes) == nil
                    }
                    if let fixed {
                        precondition(AX25Plausibility.problem(in: fixed.bytes) == nil, "HDLC: a repair accepted a frame its test refused")
                        _ = try? AX25Frame(decoding: fixed.bytes)
                    }
                case nil:
                    break
                }
            }
        }
    )

    // MARK: AX.25

    /// The input is one frame's bytes without the FCS (as HDLC hands it over).
    static let ax25 = FuzzTarget(
        name: "ax25",
        summary: "AX25Frame(decoding:) strict and lenient, AX25Plausibility, the monitor line of what decodes",
        seeds: { sampleAX25Frames().enumerated().map { (name: "frame-\($0.offset)", bytes: $0.element.encode()) } },
        run: { input in
            _ = AX25Plausibility.problem(in: input)
            for strict in [true, false] {
                guard let frame = try? AX25Frame(decoding: input, strictCallsigns: strict) else { continue }
                _ = frame.monitorLine()
                _ = frame.monitorLine(asciiOnly: true)
                let again = try? AX25Frame(decoding: frame.encode(), strictCallsigns: strict)
                precondition(again == frame, "AX.25: a decoded frame does not encode back to itself")
            }
        }
    )

    /// The input is one line of TNC2 monitor text (`SRC>DEST,DIGI*:info`), as a KISS client or a log gives it.
    static let ax25Monitor = FuzzTarget(
        name: "ax25-monitor",
        summary: "AX25Frame(monitorLine:): the TNC2 monitor format",
        seeds: {
            sampleAX25Frames().enumerated().map { (name: "line-\($0.offset)", bytes: Array($0.element.monitorLine().utf8)) }
                + [(name: "escaped", bytes: Array("N0CALL-1>APRS,WIDE1-1*,WIDE2-2:<0x00>hi<0xff>\\n".utf8))]
        },
        run: { input in
            let line = String(decoding: input, as: UTF8.self)
            guard let frame = try? AX25Frame(monitorLine: line) else { return }
            _ = frame.encode()
            _ = try? AX25Frame(monitorLine: frame.monitorLine())
        }
    )

    // MARK: KISS

    /// The input is a byte stream from a KISS client (TCP or serial), fed in pieces whose sizes byte 0 picks.
    static let kiss = FuzzTarget(
        name: "kiss",
        summary: "KISSDecoder (FEND framing, escapes, commands) and AX.25 decoding of data frames",
        seeds: {
            var stream: [UInt8] = [7]
            for frame in sampleAX25Frames() { stream += KISSEncoder.encode(.data(frame.encode())) }
            stream += KISSEncoder.encode(KISSFrame(port: 1, command: .txDelay, payload: [50]))
            stream += KISSEncoder.encode(.data([0xC0, 0xDB, 0xDC, 0xDD, 0x00]))
            return [(name: "stream", bytes: stream)]
        },
        run: { input in
            guard let first = input.first else { return }
            let piece = Int(first) + 1
            var decoder = KISSDecoder()
            var rest = input.dropFirst()
            while !rest.isEmpty {
                for frame in decoder.decode(rest.prefix(piece)) {
                    let again = KISSDecoder().decodedAll(KISSEncoder.encode(frame))
                    precondition(again == [frame], "KISS: a decoded frame does not encode back to itself")
                    if frame.command == .dataFrame { _ = try? AX25Frame(decoding: frame.payload) }
                }
                rest = rest.dropFirst(piece)
            }
        }
    )

    // MARK: Link frame

    /// Byte 0 picks the piece size; the rest is the channel protocol's byte stream: whole-frame
    /// decoding of it, and the stream decoder (sync hunting, resynchronisation) fed piece by piece.
    static let linkFrame = FuzzTarget(
        name: "link-frame",
        summary: "LinkFrame(decoding:) and LinkStreamDecoder (the channel protocol's frames)",
        seeds: {
            let frames = [
                LinkFrame(kind: .hello, session: 1, payload: Array("phone".utf8)),
                LinkFrame(kind: .data, flags: [.poll, .duplex], session: 1, message: 3, fragment: 1, fragmentCount: 2,
                          payload: Array(0..<64)),
                LinkFrame(kind: .ack, flags: [.fromDevice, .complete], session: 1, message: 3, payload: [0x03]),
            ]
            return [
                (name: "one", bytes: [0xFF] + frames[1].encode()),
                (name: "stream", bytes: [16, 0x00, 0x53] + frames.flatMap { $0.encode() + [0x55] }),
            ]
        },
        run: { input in
            guard let first = input.first else { return }
            if let frame = try? LinkFrame(decoding: input.dropFirst()) {
                precondition((try? LinkFrame(decoding: frame.encode())) == frame, "link frame: does not encode back to itself")
            }
            var decoder = LinkStreamDecoder()
            var rest = input.dropFirst()
            let piece = Int(first) + 1
            while !rest.isEmpty {
                for frame in decoder.push(rest.prefix(piece)) {
                    precondition((try? LinkFrame(decoding: frame.encode())) == frame, "link stream: a frame does not encode back to itself")
                }
                rest = rest.dropFirst(piece)
                precondition(decoder.bufferedBytes <= 2 * LinkStreamDecoder.maximumFrameLength + piece,
                             "link stream: the decoder keeps \(decoder.bufferedBytes) bytes")
            }
            _ = decoder.resynchronize()
        }
    )
}

extension KISSDecoder {
    /// Every frame in `bytes`, decoded by a fresh copy of this decoder.
    fileprivate func decodedAll(_ bytes: [UInt8]) -> [KISSFrame] {
        var copy = self
        return copy.decode(bytes)
    }
}
