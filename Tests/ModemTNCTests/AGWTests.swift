import Foundation
import Testing
import ModemTestSupport
import ModemAudio
import ModemCodecs
import ModemTNC
#if canImport(Glibc)
import Glibc
#endif

/// Polls `server` (and lets `clients` read) until `done` holds or `seconds` pass (a hang guard);
/// returns the events.
@discardableResult
func agwPump(_ server: AGWServer, clients: [AGWTestClient] = [], seconds: Double = 60,
             requests: (AGWCommand, TCPClientInfo) -> Void = { _, _ in },
             until done: ([AGWServerEvent]) -> Bool) -> [AGWServerEvent] {
    let deadline = Date().addingTimeInterval(seconds)
    var events: [AGWServerEvent] = []
    while Date() < deadline {
        events += server.poll(timeoutMilliseconds: 2, handlingRequests: requests)
        for c in clients { c.receive() }
        if done(events) { break }
    }
    return events
}

@Suite("AGW frames and decoder")
struct AGWCodecTests {
    static let sample = AGWFrame(port: 0, kind: "V", pid: 0xF0, callFrom: "N0CALL-7", callTo: "APRS",
                                 data: [1] + Array("WIDE1-1".utf8) + [0, 0, 0] + Array("hello".utf8), userReserved: 0x01020304)

    @Test("The header is 36 little-endian bytes: port, kind, PID, calls NUL-padded, length, user field")
    func headerLayout() {
        let bytes = Self.sample.encode()
        #expect(bytes.count == 36 + Self.sample.data.count)
        #expect(bytes[0] == 0 && bytes[4] == UInt8(ascii: "V") && bytes[6] == 0xF0)
        #expect(Array(bytes[8..<18]) == Array("N0CALL-7".utf8) + [0, 0])
        #expect(Array(bytes[18..<28]) == Array("APRS".utf8) + [UInt8](repeating: 0, count: 6))
        #expect(Array(bytes[28..<32]) == [UInt8(Self.sample.data.count), 0, 0, 0])
        #expect(Array(bytes[32..<36]) == [4, 3, 2, 1])
        // The test client's own reading of the header agrees.
        let mine = AGWMessage(port: 0, kind: "V", pid: 0xF0, from: "N0CALL-7", to: "APRS", data: Self.sample.data)
        #expect(mine.encode(userReserved: 0x01020304) == bytes)
    }

    @Test("Decoded whole, one byte at a time and in odd pieces: the same frames")
    func pieces() {
        let frames = [Self.sample, AGWFrame(kind: "R"), AGWFrame(port: 1, kind: "X", callFrom: "N0CALL"),
                      AGWFrame(kind: "K", data: [UInt8](repeating: 0x55, count: AGWFrame.maximumDataBytes))]
        let stream = frames.flatMap { $0.encode() }
        var whole = AGWDecoder()
        #expect(whole.decode(stream) == frames)
        var single = AGWDecoder()
        var got: [AGWFrame] = []
        for b in stream {
            got += single.decode([b])
            #expect(single.bufferedBytes <= 36 + AGWFrame.maximumDataBytes)
        }
        #expect(got == frames)
        var odd = AGWDecoder()
        got = []
        var i = 0
        var size = 1
        while i < stream.count {
            got += odd.decode(stream[i..<min(stream.count, i + size)])
            i += size
            size = size * 3 % 101 + 1
        }
        #expect(got == frames)
        #expect(odd.statistics.frames == frames.count)
        #expect(odd.failure == nil)
    }

    @Test("A partial header waits; a header announcing too much (or a negative length) ends the stream, bounded")
    func oversizeAndPartial() {
        var d = AGWDecoder()
        let r = AGWFrame(kind: "R").encode()
        #expect(d.decode(r[0..<20]).isEmpty)
        #expect(d.bufferedBytes == 20)
        #expect(d.decode(r[20...]) == [AGWFrame(kind: "R")])
        for length in [UInt32(AGWFrame.maximumDataBytes + 1), 0xFFFF_FFFF, 0x8000_0000, 100_000_000] {
            var bad = AGWDecoder()
            var header = AGWFrame(kind: "M").encode()
            for i in 0..<4 { header[28 + i] = UInt8(truncatingIfNeeded: length >> (8 * UInt32(i))) }
            #expect(bad.decode(r + header + r).count == 1, "the frame before the bad header is kept")
            #expect(bad.failure != nil)
            #expect(bad.statistics.oversized == 1)
            #expect(bad.bufferedBytes == 0)
            #expect(bad.decode(r).isEmpty, "nothing is read after the stream broke")
        }
    }

    @Test("Garbage: random bytes never crash or grow the buffer past one message")
    func garbage() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var d = AGWDecoder()
            let junk = (0..<Int.random(in: 0...5000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = d.decode(junk)
            #expect(d.bufferedBytes <= 36 + AGWFrame.maximumDataBytes)
        }
    }

    @Test("Ports of 16 or more are read as 0 and counted; a 10-byte call without NUL keeps 9 characters")
    func portsAndCalls() {
        var bytes = AGWFrame(kind: "g").encode()
        bytes[0] = 200
        for i in 0..<10 { bytes[8 + i] = UInt8(ascii: "A") + UInt8(i) }
        var d = AGWDecoder()
        let f = d.decode(bytes)
        #expect(f.count == 1)
        #expect(f.first?.port == 0)
        #expect(f.first?.callFrom == "ABCDEFGHI")
        #expect(d.statistics.invalidPorts == 1)
    }

    @Test("Commands: each kind Dire Wolf reads, typed")
    func commands() {
        #expect(AGWCommand(AGWFrame(kind: "R")) == .version)
        #expect(AGWCommand(AGWFrame(port: 2, kind: "g")) == .portCapabilities(port: 2))
        #expect(AGWCommand(Self.sample) == .sendUnproto(port: 0, pid: 0xF0, from: "N0CALL-7", to: "APRS", via: ["WIDE1-1"], info: Array("hello".utf8)))
        #expect(AGWCommand(AGWFrame(kind: "M", callFrom: "A", callTo: "B", data: [1, 2])) == .sendUnproto(port: 0, pid: 0, from: "A", to: "B", via: [], info: [1, 2]))
        #expect(AGWCommand(AGWFrame(kind: "K", data: [0, 9, 8])) == .sendRaw(port: 0, frame: [9, 8]))
        #expect(AGWCommand(AGWFrame(kind: "C", callFrom: "N0CALL", callTo: "N1ABC")) == .connect(AGWConnectRequest(port: 0, from: "N0CALL", to: "N1ABC")))
        let via = [2] + Array("W1XYZ".utf8) + [UInt8](repeating: 0, count: 5) + Array("W2XYZ-3".utf8) + [0, 0, 0]
        #expect(AGWCommand(AGWFrame(kind: "v", callFrom: "N0CALL", callTo: "N1ABC", data: via))
                == .connect(AGWConnectRequest(port: 0, from: "N0CALL", to: "N1ABC", via: ["W1XYZ", "W2XYZ-3"])))
        #expect(AGWCommand(AGWFrame(kind: "c", pid: 0xCF, callFrom: "N0CALL", callTo: "N1ABC")) == .connect(AGWConnectRequest(port: 0, from: "N0CALL", to: "N1ABC", pid: 0xCF)))
        #expect(AGWCommand(AGWFrame(kind: "D", pid: 0xF0, callFrom: "N0CALL", callTo: "N1ABC", data: [1])) == .connectedData(port: 0, from: "N0CALL", to: "N1ABC", pid: 0xF0, data: [1]))
        #expect(AGWCommand(AGWFrame(kind: "d", callFrom: "N0CALL", callTo: "N1ABC")) == .disconnect(port: 0, from: "N0CALL", to: "N1ABC"))
        #expect(AGWCommand(AGWFrame(kind: "Y", callFrom: "N0CALL", callTo: "N1ABC")) == .outstandingOnConnection(port: 0, from: "N0CALL", to: "N1ABC"))
        #expect(AGWCommand(AGWFrame(kind: "Z")) == .unknown(kind: UInt8(ascii: "Z")))
        if case .malformed = AGWCommand(AGWFrame(kind: "V", data: [3, 0, 0])) {} else { Issue.record("a V whose path runs past its data is malformed") }
        if case .malformed = AGWCommand(AGWFrame(kind: "V", data: [9] + [UInt8](repeating: 0x41, count: 95))) {} else { Issue.record("9 digipeaters are too many") }
    }

    @Test("Answers byte for byte as Dire Wolf 1.8 builds them")
    func answers() throws {
        #expect(AGWFrame.versionReply().data == [0xD5, 0x07, 0, 0, 0x7F, 0, 0, 0])
        #expect(AGWFrame.portInformationReply(["first soundcard mono"]).data == Array("1;Port1 first soundcard mono;".utf8) + [0])
        #expect(AGWFrame.portCapabilitiesReply(port: 0).data == [0, 1, 0x19, 4, 0xC8, 4, 7, 0, 1, 0, 0, 0])
        let x = AGWFrame.registrationReply(port: 1, callsign: "N0CALL", success: false)
        #expect(x.port == 1 && x.callFrom == "N0CALL" && x.data == [0])
        let d = AGWFrame.disconnectedReply(port: 0, remote: "N9ZZZ", own: "N0CALL", retryOut: true)
        #expect(d.callFrom == "N9ZZZ" && d.callTo == "N0CALL" && d.data == Array("*** DISCONNECTED RETRYOUT With N9ZZZ\r".utf8) + [0])
        #expect(AGWFrame.disconnectedReply(port: 0, remote: "N9ZZZ", own: "N0CALL", retryOut: false).data == Array("*** DISCONNECTED From Station N9ZZZ\r".utf8) + [0])
        #expect(AGWFrame.connectedReply(port: 0, remote: "N9ZZZ", own: "N0CALL", incoming: true).data == Array("*** CONNECTED To Station N9ZZZ\r".utf8) + [0])
        #expect(AGWFrame.connectedReply(port: 0, remote: "N9ZZZ", own: "N0CALL", incoming: false).data == Array("*** CONNECTED With Station N9ZZZ\r".utf8) + [0])
        let y = AGWFrame.outstandingOnConnectionReply(port: 0, own: "N0CALL", remote: "N9ZZZ", count: 3)
        #expect(y.kind == UInt8(ascii: "Y") && y.callFrom == "N0CALL" && y.callTo == "N9ZZZ" && y.data == [3, 0, 0, 0])
        #expect(AGWFrame.connectedDataReply(port: 0, remote: "N9ZZZ", own: "N0CALL", pid: 0xF0, data: [1, 2]).data == [1, 2])
    }

    @Test("Monitor text: U, I, S and T as Dire Wolf writes them")
    func monitorText() throws {
        let t = AGWTimeOfDay(hour: 8, minute: 5, second: 7)
        // What Dire Wolf printed for its own V frame over the null sink (both C bits set: PF).
        var ui = try AX25Frame(monitorLine: "N0DW>APRS,WIDE1-1:hello from direwolf")
        var m = AGWFrame.monitorFrame(port: 0, frame: ui, ownTransmission: false, time: t)
        #expect(m.kindCharacter == "U" && m.callFrom == "N0DW" && m.callTo == "APRS")
        #expect(m.data == Array(" 1:Fm N0DW To APRS Via WIDE1-1 <UI pid=F0 Len=19 PF=0 >[08:05:07]\rhello from direwolf\r".utf8) + [0])
        ui.source.highBit = false
        ui.digipeaters = [try AX25Address(parsing: "W1ABC"), try AX25Address(parsing: "WIDE2-1")]
        ui.digipeaters[0].hasBeenRepeated = true
        ui.digipeaters[1].hasBeenRepeated = true
        m = AGWFrame.monitorFrame(port: 0, frame: ui, ownTransmission: true, time: t)
        #expect(m.kindCharacter == "T")
        #expect(m.text.hasPrefix(" 1:Fm N0DW To APRS Via W1ABC,WIDE2-1* <UI pid=F0 Len=19 P=0 >[08:05:07]\r"), "\(m.text)")
        // An I frame (a response: F), an RR and a SABM, without information.
        var dest = try AX25Address(parsing: "N1ABC")
        var src = try AX25Address(parsing: "N0CALL")
        src.highBit = true
        let i = AX25Frame(destination: dest, source: src, control: 0x3A | 0x10, pid: 0xF0, info: Array("hi".utf8))
        #expect(AGWFrame.monitorFrame(port: 0, frame: i, ownTransmission: false, time: t).text == " 1:Fm N0CALL To N1ABC <I S5 R1 pid=F0 Len=2 F=1 >[08:05:07]\rhi\r")
        dest.highBit = true
        src.highBit = false
        let rr = AX25Frame(destination: dest, source: src, control: 0x41 | 0x10, pid: nil)
        let rrm = AGWFrame.monitorFrame(port: 0, frame: rr, ownTransmission: false, time: t)
        #expect(rrm.kindCharacter == "S" && rrm.text == " 1:Fm N0CALL To N1ABC <RR R2 P=1 >[08:05:07]\r")
        let sabm = AX25Frame(destination: dest, source: src, control: 0x3F, pid: nil)
        #expect(AGWFrame.monitorFrame(port: 1, frame: sabm, ownTransmission: false, time: t).text == " 2:Fm N0CALL To N1ABC <SABM P=1 >[08:05:07]\r")
    }

    @Test("Monitor text of modulo-128 frames: read with two control bytes where Dire Wolf guesses so")
    func monitorTextModulo128() throws {
        let t = AGWTimeOfDay(hour: 8, minute: 5, second: 7)
        let local = try AX25Address(parsing: "N1ABC"), remote = try AX25Address(parsing: "N0CALL")
        func frame(_ kind: AX25LinkFrame.Kind, _ cr: AX25LinkFrame.CommandResponse) throws -> AX25Frame {
            try AX25Frame(decoding: AX25LinkFrame(destination: local, source: remote, commandResponse: cr, pollFinal: true,
                                                  kind: kind, modulo: .oneTwentyEight).encode())
        }
        // I frame N(S) 100, N(R) 77, P: two control bytes, then the PID F0.
        let i = try frame(.information(ns: 100, nr: 77, pid: 0xF0, info: Array("hi".utf8)), .command)
        #expect(AGWFrame.monitorFrame(port: 0, frame: i, ownTransmission: false, time: t).text
                == " 1:Fm N0CALL To N1ABC <I S100 R77 pid=F0 Len=2 P=1 >[08:05:07]\rhi\r")
        // RR N(R) 90, F; SREJ N(R) 12 listing one more: its information after the second control byte.
        let rr = try frame(.supervisory(.rr, nr: 90, info: []), .response)
        #expect(AGWFrame.monitorFrame(port: 0, frame: rr, ownTransmission: false, time: t).text
                == " 1:Fm N0CALL To N1ABC <RR R90 F=1 >[08:05:07]\r")
        let srej = try frame(.supervisory(.srej, nr: 12, info: [0x1C]), .response)
        #expect(AGWFrame.monitorFrame(port: 0, frame: srej, ownTransmission: false, time: t).data
                == Array(" 1:Fm N0CALL To N1ABC <SREJ R12 F=1 Len=1 >[08:05:07]\r".utf8) + [0x1C, 0x0D, 0])
        // An I frame whose information does not start with F0 or 08 stays modulo 8 (as Dire Wolf reads it).
        let plain = try frame(.information(ns: 3, nr: 2, pid: 0xCF, info: [0x41]), .command)
        #expect(AGWFrame.monitorFrame(port: 0, frame: plain, ownTransmission: false, time: t).text.contains("<I S3 R"))
    }
}

extension AGWFrame {
    /// The data as text without its trailing NUL.
    var text: String { String(decoding: data.last == 0 ? data.dropLast() : data[...], as: UTF8.self) }
}

@Suite("AGW server")
struct AGWServerTests {
    @Test("R, G, g, X (twice the same call, then a port that does not exist), x, y: answered as Dire Wolf does, in order")
    func answers() throws {
        let server = try AGWServer(port: 0)
        let c = try AGWTestClient(port: server.port)
        for m in [AGWMessage(kind: "R"), AGWMessage(kind: "G"), AGWMessage(kind: "g"), AGWMessage(kind: "X", from: "N0CALL"),
                  AGWMessage(kind: "X", from: "N0CALL"), AGWMessage(port: 1, kind: "X", from: "N0CALL"), AGWMessage(kind: "P"),
                  AGWMessage(kind: "H"), AGWMessage(kind: "m"), AGWMessage(kind: "y"), AGWMessage(kind: "R")] {
            try c.send(m)
        }
        // The one request here (y) is answered where it stands, between the server's own answers.
        let events = agwPump(server, clients: [c], requests: { command, client in
            if command == .outstandingOnPort(port: 0) { server.send(.outstandingOnPortReply(port: 0, count: 0), to: client.id) }
        }) { _ in c.messages.count >= 8 }
        let kinds = c.messages.map(\.kind)
        #expect(kinds == ["R", "G", "g", "X", "X", "X", "y", "R"], "\(c.messages)")
        #expect(c.messages[0].data == [0xD5, 7, 0, 0, 127, 0, 0, 0])
        #expect(c.messages[1].text == "1;Port1 first soundcard mono;")
        #expect(c.messages[3].data == [1] && c.messages[4].data == [1] && c.messages[5].data == [0])
        #expect(c.messages[5].port == 1 && c.messages[5].from == "N0CALL")
        #expect(c.messages[6].u32 == 0)
        let client = try #require(server.connectedClients.first)
        #expect(server.sendsMonitorFrames(to: client.id))
        #expect(!server.sendsRawFrames(to: client.id))
        #expect(server.client(registeredFor: "N0CALL")?.id == client.id)
        #expect(events.contains { if case .answered(.register(0, "N0CALL"), _) = $0 { true } else { false } })
        try c.send(AGWMessage(kind: "x", from: "N0CALL"))
        agwPump(server, clients: [c]) { $0.contains { if case .answered(.unregister, _) = $0 { true } else { false } } }
        #expect(server.client(registeredFor: "N0CALL") == nil)
        server.close()
    }

    @Test("An oversize header drops that client, as Dire Wolf does; garbage from another affects nobody else")
    func oversizeDropsOnlyThatClient() throws {
        let server = try AGWServer(port: 0)
        let good = try AGWTestClient(port: server.port)
        let bad = try AGWTestClient(port: server.port)
        agwPump(server, clients: [good, bad]) { _ in server.connectedClients.count == 2 }
        var header = AGWMessage(kind: "M", from: "N0CALL", to: "APRS").encode()
        header[30] = 1    // 65536 bytes announced
        try bad.send(bytes: AGWMessage(kind: "R").encode() + header + [UInt8](repeating: 0x41, count: 5000))
        let events = agwPump(server, clients: [good, bad]) { _ in bad.closedByServer }
        #expect(bad.closedByServer)
        #expect(bad.messages.map(\.kind) == ["R"], "the message before the bad header was answered")
        #expect(events.contains { if case .disconnected(_, .protocolError, let s) = $0 { s.oversized == 1 } else { false } }, "\(events)")
        try good.send(AGWMessage(kind: "R"))
        agwPump(server, clients: [good]) { _ in good.messages.count == 1 }
        #expect(good.messages.map(\.kind) == ["R"])
        #expect(!good.closedByServer)
        #expect(server.agwStatistics.oversized == 1)
        server.close()
    }

    @Test("Many clients: 20 against a limit of 16, each answered; the 4 newcomers are refused")
    func manyClients() throws {
        let server = try AGWServer(port: 0, maximumClients: 16, evictionIdleSeconds: 600)
        let clients = try (0..<16).map { _ in try AGWTestClient(port: server.port) }
        agwPump(server, clients: clients) { _ in server.connectedClients.count == 16 }
        let late = try (0..<4).map { _ in try AGWTestClient(port: server.port) }
        agwPump(server, clients: clients + late) { _ in late.allSatisfy(\.closedByServer) }
        #expect(late.allSatisfy { $0.closedByServer })
        #expect(server.clientsRefused == 4)
        for c in clients { try c.send(AGWMessage(kind: "R")) }
        agwPump(server, clients: clients) { _ in clients.allSatisfy { $0.messages.count == 1 } }
        #expect(clients.allSatisfy { $0.messages.map(\.kind) == ["R"] })
        server.close()
    }

    @Test("A client that does not read is dropped once its output passes the limit; the others get everything")
    func slowClientDropped() throws {
        let server = try AGWServer(port: 0, maximumOutputBytes: 16 * 1024, socketSendBufferBytes: 4096)
        let slow = try AGWTestClient(port: server.port, receiveBufferBytes: 4096)
        let fast = try AGWTestClient(port: server.port)
        agwPump(server, clients: [fast]) { _ in server.connectedClients.count == 2 }
        try slow.send(AGWMessage(kind: "k"))
        try fast.send(AGWMessage(kind: "k"))
        agwPump(server, clients: [fast]) { _ in server.connectedClients.allSatisfy { server.sendsRawFrames(to: $0.id) } }
        let frame = try AX25Frame(monitorLine: "N0CALL>APRS:" + String(repeating: "x", count: 200))
        var sent = 0
        var events: [AGWServerEvent] = []
        while server.connectedClients.count == 2, sent < 10_000 {
            server.deliverReceived(frame, bytes: frame.encode())
            sent += 1
            events += agwPump(server, clients: [fast], seconds: 0) { _ in true }
        }
        events += agwPump(server, clients: [fast]) { _ in fast.messages.count == sent }
        #expect(server.connectedClients.count == 1)
        #expect(server.clientsDroppedAsSlow == 1)
        #expect(events.contains { if case .disconnected(_, .outputOverflow, _) = $0 { true } else { false } })
        #expect(fast.messages.count == sent)
        #expect(fast.messages.allSatisfy { $0.kind == "K" && $0.data.first == 0 && Array($0.data.dropFirst()) == frame.encode() })
        server.close()
    }
}

@Suite("KISS and AGW on one TNC")
struct TNCAGWTests {
    @Test("An AGW M frame is transmitted (monitor T to the client), decoded frames reach raw and monitor AGW clients and KISS clients")
    func bothWays() throws {
        let wav = try TNCFixtures.wav(lines: Array(TNCFixtures.lines.prefix(2)), name: "agw")
        defer { unlink(wav) }
        let reader = try AudioFileReader(path: wav)
        let sink = MemorySink(sampleRate: reader.sampleRate)
        let kiss = try KISSServer(port: 0)
        let agw = try AGWServer(port: 0, timeOfDay: { AGWTimeOfDay(hour: 12, minute: 0, second: 0) })
        let log = TNCEventLog()
        let tnc = try TNC(settings: TNCFixtures.settings, source: reader, sink: sink, server: kiss, agwServer: agw,
                          onEvent: { log.append($0) })
        let client = try AGWTestClient(port: agw.port)
        try client.send(AGWMessage(kind: "m"))
        try client.send(AGWMessage(kind: "k"))
        let kissClient = try KISSTestClient(port: kiss.port)
        try tncPump(tnc, clients: [client], seconds: 60) {
            kissClient.receive()
            return tnc.inputEnded && client.messages.count == 4 && kissClient.dataPayloads.count == 2
        }
        let expected = TNCFixtures.frames
        #expect(client.messages.map(\.kind) == ["K", "U", "K", "U"], "\(client.messages)")
        #expect(Array(client.messages[0].data.dropFirst()) == expected[0].encode())
        #expect(client.messages[1].text == " 1:Fm \(expected[0].source) To \(expected[0].destination)"
                + (expected[0].digipeaters.isEmpty ? "" : " Via " + expected[0].digipeaters.map(\.description).joined(separator: ","))
                + " <UI pid=F0 Len=\(expected[0].info.count) PF=0 >[12:00:00]\r" + String(decoding: expected[0].info, as: UTF8.self) + "\r")
        #expect(kissClient.dataPayloads == expected.prefix(2).map { $0.encode() })
        // Send through AGW: V with a path.
        let v = AGWMessage(kind: "V", pid: 0xF0, from: "N0AGW", to: "APRS",
                           data: [1] + Array("WIDE1-1".utf8) + [0, 0, 0] + Array("sent over AGW".utf8))
        try client.send(v)
        try tncPump(tnc, clients: [client], seconds: 60) { tnc.currentStatistics.framesTransmitted == 1 && client.messages.count == 5 }
        #expect(client.messages.last?.kind == "T")
        #expect(client.messages.last?.text == " 1:Fm N0AGW To APRS Via WIDE1-1 <UI pid=F0 Len=13 PF=0 >[12:00:00]\rsent over AGW\r")
        try tnc.finish()
        #expect(try TNCFixtures.decode(sink.samples, sampleRate: sink.sampleRate) == ["N0AGW>APRS,WIDE1-1:sent over AGW"])
        #expect(log.lines.contains { $0.contains("tx N0AGW>APRS,WIDE1-1:sent over AGW") && $0.contains("AGW client #1") })
    }

    @Test("A client that leaves while its link's I frames wait for the channel: they are dropped, the DISC goes out instead")
    func queuedFramesOfALeavingClientAreDropped() throws {
        // The air: 1.5 s of silence (our SABME goes out), then N9ZZZ's UA and, with no gap, a long busy
        // stretch from a third station, so the I frames made when the link comes up wait in the queue.
        let rate = 44100
        let call = { (text: String) in try AX25Address(parsing: text, role: "test call") }
        let ua = AX25LinkFrame(destination: try call("N0CALL"), source: try call("N9ZZZ"), commandResponse: .response,
                               pollFinal: true, kind: .unnumbered(.ua, pid: nil, info: []))
        let busy = AX25Frame(destination: try call("APRS"), source: try call("N7BSY"), info: Array(repeating: UInt8(ascii: "x"), count: 200))
        var air = [Float](repeating: 0, count: rate * 3 / 2)
        air += try TNCFixtures.afsk(ua.encode(), sampleRate: Double(rate), txDelayMilliseconds: 300, txTailMilliseconds: 30)
        for _ in 0..<3 {
            air += try TNCFixtures.afsk(busy.encode(), sampleRate: Double(rate), txDelayMilliseconds: 100, txTailMilliseconds: 30)
        }
        air += [Float](repeating: 0, count: 3 * rate)   // room for what is still queued to go out
        let agw = try AGWServer(port: 0)
        let log = TNCEventLog()
        let sink = MemorySink(sampleRate: rate)
        var options = TNCOptions()
        options.outputIsChannel = true          // the carrier detector decides when to send
        options.waitsForFirstClient = false
        options.blockSeconds = 0.02
        options.randomSeed = 5
        options.parameters = TNCParameters(txDelay: 20, persistence: 255)
        let tnc = try TNC(settings: TNCFixtures.settings, source: MemorySource(air, sampleRate: rate), sink: sink,
                          server: nil, agwServer: agw, options: options, onEvent: { log.append($0) })
        let client = try AGWTestClient(port: agw.port)
        try client.send(AGWMessage(kind: "C", from: "N0CALL", to: "N9ZZZ"))
        try client.send(AGWMessage(kind: "D", pid: 0xF0, from: "N0CALL", to: "N9ZZZ", data: Array("never to be sent".utf8)))
        // The link is up (the client is told) and its I frame waits behind the busy channel.
        #expect(try tncPump(tnc, clients: [client], seconds: 60) { client.messages.contains { $0.kind == "C" } })
        let sentBefore = tnc.currentStatistics.framesTransmitted
        #expect(tnc.queuedFrames >= 1 && sentBefore == 1, "\(tnc.queuedFrames) queued, \(sentBefore) sent; \(log.lines)")
        client.close()
        #expect(try tncPump(tnc, seconds: 60) { log.lines.contains { $0.contains(" left: ") } })
        // Only the DISC waits now; nothing went out meanwhile (the channel is still busy).
        #expect(tnc.queuedFrames == 1 && tnc.currentStatistics.framesTransmitted == sentBefore,
                "\(tnc.queuedFrames) queued, \(tnc.currentStatistics.framesTransmitted) sent; \(log.lines)")
        try tncPump(tnc, seconds: 60) { tnc.inputEnded }
        try tnc.finish()
        let sent = try TNCFixtures.decodeFrames(sink.samples, sampleRate: rate).map { try AX25LinkFrame.header($0) }
        #expect(sent.first?.unnumbered == .sabme)
        #expect(sent.contains { $0.unnumbered == .disc }, "\(sent.map(\.control))")
        #expect(!sent.contains { $0.control & 1 == 0 }, "an I frame went out after its client left: \(sent.map(\.control))")
    }

    @Test("AGW only: a connect request calls (SABME on the air); Y counts the link's frames, d with no link is answered at once, y counts the queue; bad M rejected")
    func connectedModeAndQueue() throws {
        let wav = try TNCFixtures.wav(lines: [TNCFixtures.lines[0]], name: "agwonly")
        defer { unlink(wav) }
        let reader = try AudioFileReader(path: wav)
        let agw = try AGWServer(port: 0)
        let log = TNCEventLog()
        let sink = MemorySink(sampleRate: reader.sampleRate)
        let tnc = try TNC(settings: TNCFixtures.settings, source: reader, sink: sink,
                          server: nil, agwServer: agw, onEvent: { log.append($0) })
        let client = try AGWTestClient(port: agw.port)
        for m in [AGWMessage(kind: "C", from: "N0CALL", to: "N9ZZZ"), AGWMessage(kind: "Y", from: "N0CALL", to: "N9ZZZ"),
                  AGWMessage(kind: "d", from: "N0CALL", to: "N8YYY"), AGWMessage(kind: "M", from: "bad call!", to: "APRS", data: [1]),
                  AGWMessage(port: 3, kind: "M", from: "N0CALL", to: "APRS", data: [1]), AGWMessage(kind: "y")] {
            try client.send(m)
        }
        try tncPump(tnc, clients: [client], seconds: 60) { client.messages.count == 3 }
        #expect(client.messages.map(\.kind) == ["Y", "d", "y"])
        // No I frame yet: nothing outstanding on the link being set up.
        #expect(client.messages[0].u32 == 0 && client.messages[0].from == "N0CALL")
        #expect(client.messages[1].text == "*** DISCONNECTED From Station N8YYY\r")
        // The SABME waits in the transmit queue when y is answered (requests are handled in order).
        #expect(client.messages[2].u32 == 1)
        #expect(tnc.currentStatistics.framesRejected == 2)
        #expect(log.lines.contains { $0.contains("asked to connect N0CALL to N9ZZZ") })
        try tnc.finish()
        // What went on the air: the call, a SABME (the v2.2 connect) from N0CALL to N9ZZZ.
        let sent = try TNCFixtures.decodeFrames(sink.samples, sampleRate: sink.sampleRate)
        let sabme = try #require(sent.first)
        let header = try AX25LinkFrame.header(sabme)
        #expect(header.unnumbered == .sabme)
        #expect(header.destination.description == "N9ZZZ" && header.source.description == "N0CALL")
    }
}
