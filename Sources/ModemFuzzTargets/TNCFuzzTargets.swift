import ModemCodecs
import ModemTNC

/// Targets for ModemTNC: what a TNC takes from strangers. The AGW port's byte stream from any TCP
/// client, and connected-mode AX.25 frames from anyone on the channel, into the data-link state machine.
enum TNCFuzzTargets {
    static let all: [FuzzTarget] = [agw, ax25LinkFrame, ax25LinkStation]

    static func address(_ call: String, ssid: Int = 0) -> AX25Address {
        do { return try AX25Address(callsign: call, ssid: ssid) } catch { preconditionFailure("fuzz address \(call): \(error)") }
    }

    /// The station's own call and the caller's in the seeds.
    static let local = address("N0CALL", ssid: 1)
    static let remote = address("N1TST")

    // MARK: AGW

    /// A few AGW requests as a client sends them: version, register, monitor, connect, data, disconnect,
    /// an unproto frame with a path.
    static func sampleAGWFrames() -> [AGWFrame] {
        [
            AGWFrame(kind: "R"),
            AGWFrame(kind: "X", callFrom: "N0CALL-1"),
            AGWFrame(kind: "m"),
            AGWFrame(kind: "C", callFrom: "N0CALL-1", callTo: "N1TST"),
            AGWFrame(kind: "D", pid: 0xF0, callFrom: "N0CALL-1", callTo: "N1TST", data: Array("hello\r".utf8)),
            AGWFrame(kind: "V", pid: 0xF0, callFrom: "N0CALL-1", callTo: "APRS", data: [2] + Array("WIDE1-1\0\0\0WIDE2-1\0\0\0".utf8) + Array("!test".utf8)),
            AGWFrame(kind: "Y", callFrom: "N0CALL-1", callTo: "N1TST"),
            AGWFrame(kind: "d", callFrom: "N0CALL-1", callTo: "N1TST"),
        ]
    }

    /// The input is a TCP client's byte stream to the AGW port, fed in pieces whose sizes byte 0 picks;
    /// every message is read as a request, and encodes back to what it decoded from.
    static let agw = FuzzTarget(
        name: "agw",
        summary: "AGWDecoder (36-byte headers, lengths, ports) and AGWCommand (what each request asks)",
        seeds: {
            [(name: "session", bytes: [11] + sampleAGWFrames().flatMap { $0.encode() })]
        },
        run: { input in
            guard let first = input.first else { return }
            let piece = Int(first) + 1
            var decoder = AGWDecoder()
            var rest = input.dropFirst()
            while !rest.isEmpty {
                for frame in decoder.decode(rest.prefix(piece)) {
                    _ = AGWCommand(frame)
                    var again = AGWDecoder()
                    precondition(again.decode(frame.encode()) == [frame], "AGW: a decoded frame does not encode back to itself")
                }
                rest = rest.dropFirst(piece)
            }
        }
    )

    // MARK: AX.25 link frames

    /// Frames of a connection as both ends send them, modulo 8 and 128.
    static func sampleLinkFrames() -> [AX25LinkFrame] {
        func f(_ cr: AX25LinkFrame.CommandResponse, _ p: Bool, _ kind: AX25LinkFrame.Kind, _ m: AX25Modulo = .eight,
               from: AX25Address = remote, to: AX25Address = local) -> AX25LinkFrame {
            AX25LinkFrame(destination: to, source: from, commandResponse: cr, pollFinal: p, kind: kind, modulo: m)
        }
        let xid = AX25XID(fullDuplex: false, reject: [.rej, .srej], modulo: .oneTwentyEight, iFieldLengthRx: 256)
        return [
            f(.command, true, .unnumbered(.sabme, pid: nil, info: [])),
            f(.command, true, .unnumbered(.sabm, pid: nil, info: [])),
            f(.command, true, .unnumbered(.xid, pid: nil, info: xid.encode())),
            f(.command, false, .information(ns: 0, nr: 0, pid: 0xF0, info: Array("hello\r".utf8))),
            f(.command, true, .information(ns: 1, nr: 0, pid: 0xF0, info: Array("again\r".utf8))),
            f(.response, true, .supervisory(.rr, nr: 1, info: [])),
            f(.response, false, .supervisory(.rej, nr: 0, info: [])),
            f(.command, true, .information(ns: 5, nr: 3, pid: 0xF0, info: [1, 2, 3]), .oneTwentyEight),
            f(.response, true, .supervisory(.srej, nr: 2, info: [4, 6]), .oneTwentyEight),
            f(.command, true, .unnumbered(.disc, pid: nil, info: [])),
        ]
    }

    /// Byte 0 picks the modulo; the rest is one frame off the air (without its FCS); an XID's
    /// information field is read as XID parameters too.
    static let ax25LinkFrame = FuzzTarget(
        name: "ax25-link-frame",
        summary: "AX25LinkFrame (I, S and U frames, modulo 8 and 128) and AX25XID parameters",
        seeds: {
            sampleLinkFrames().enumerated().map { i, frame in
                (name: "frame-\(i)", bytes: [frame.modulo == .eight ? 0 : 1] + frame.encode())
            }
        },
        run: { input in
            guard let first = input.first else { return }
            let bytes = Array(input.dropFirst())
            _ = try? AX25LinkFrame.header(bytes)
            guard let frame = try? AX25LinkFrame(decoding: bytes, modulo: first & 1 == 0 ? .eight : .oneTwentyEight) else { return }
            if case .unnumbered(.xid, _, let info) = frame.kind { _ = try? AX25XID(decoding: info) }
        }
    )

    // MARK: the data-link state machine

    /// A station with `N0CALL-1` registered, driven by a sequence of events (``FuzzChunks``): each
    /// message's first byte picks what happens and how far time moves (0.0-3.1 s), the rest is its
    /// bytes: a frame received, data to send on every link, the channel busy or free, a disconnect, or
    /// a connect to N1TST. The station must keep its bounds on links and queued bytes.
    static let ax25LinkStation = FuzzTarget(
        name: "ax25-link-station",
        summary: "AX25LinkStation and AX25DataLink: connected-mode AX.25 frames from anyone on the channel",
        seeds: {
            let frames = sampleLinkFrames().map { [0] + $0.encode() }
            let session = frames.prefix(2) + [[0x83] + Array("to send".utf8), [0xFF]] + frames.dropFirst(2)
            return [(name: "session", bytes: FuzzChunks.join(Array(session))),
                    (name: "outgoing", bytes: FuzzChunks.join([[0x05], [0x0F]] + frames.suffix(4)))]
        },
        run: { input in
            var parameters = AX25LinkParameters()
            parameters.maxLinks = 4
            parameters.maxQueuedBytes = 4096
            parameters.answerUnregisteredWithDM = true
            var station = AX25LinkStation(parameters: parameters)
            station.register(local)
            var now = 0.0
            var busy = false
            for message in FuzzChunks.split(input, limit: 512) {
                guard let op = message.first else { continue }
                now += Double(op >> 3) / 10
                let body = Array(message.dropFirst())
                switch op & 7 {
                case 0, 1, 2: _ = station.received(body, now: now)
                case 3:
                    for key in station.links.keys { _ = station.send(body, from: key.local, to: key.remote, now: now) }
                case 4:
                    busy.toggle()
                    _ = station.channelBusy(busy, now: now)
                case 5: _ = station.connect(from: local, to: remote, now: now)
                case 6:
                    if let key = station.links.keys.first { _ = station.disconnect(from: key.local, to: key.remote, now: now) }
                default: _ = station.advance(to: now)
                }
                precondition(station.links.count <= parameters.maxLinks, "AX.25 station: more links than its bound")
            }
        }
    )
}
