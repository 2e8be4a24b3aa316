import Foundation
import Testing
import ModemTestSupport
import ModemAudio
import ModemCodecs
import ModemDSP
import ModemPipelines
import ModemRuntime
@testable import ModemTNC
#if canImport(Glibc)
import Glibc
#endif

/// The KISS TNC with in-process TCP clients on 127.0.0.1 (the kernel picks a free port).
@Suite("KISS TNC")
struct TNCTests {
    /// A TNC decoding `wav` into a memory sink.
    static func makeTNC(wav: String, sink: MemorySink? = nil, server: KISSServer? = nil,
                        options: TNCOptions = TNCOptions(),
                        events: TNCEventLog = TNCEventLog()) throws -> (TNC, KISSServer, MemorySink) {
        let reader = try AudioFileReader(path: wav)
        let sink = sink ?? MemorySink(sampleRate: reader.sampleRate)
        let server = try server ?? KISSServer(host: "127.0.0.1", port: 0)
        let tnc = try TNC(settings: TNCFixtures.settings, source: reader, sink: sink, server: server, options: options,
                          onEvent: { events.append($0) })
        return (tnc, server, sink)
    }

    @Test("Two clients both receive every decoded frame, byte for byte")
    func twoClientsReceiveAll() throws {
        let wav = try TNCFixtures.wav(name: "two")
        defer { unlink(wav) }
        let (tnc, server, _) = try Self.makeTNC(wav: wav)
        let a = try KISSTestClient(port: server.port)
        let b = try KISSTestClient(port: server.port)
        let expected = TNCFixtures.frames.map { $0.encode() }
        // Both connect before decoding gets far: one step accepts both.
        try tncPump(tnc, clients: [a, b]) { tnc.inputEnded && a.dataPayloads.count >= expected.count && b.dataPayloads.count >= expected.count }
        #expect(a.dataPayloads == expected)
        #expect(b.dataPayloads == expected)
        #expect(a.frames.allSatisfy { $0.port == 0 && $0.command == .dataFrame })
        let stats = try tnc.finish()
        #expect(stats.receiver.decoded == expected.count)
        #expect(stats.framesToClients == 2 * expected.count)
        #expect(stats.clientsServed == 2)
    }

    @Test("With a file input, nothing is read before the first client connects")
    func waitsForFirstClient() throws {
        let wav = try TNCFixtures.wav(lines: Array(TNCFixtures.lines.prefix(2)), name: "wait")
        defer { unlink(wav) }
        let log = TNCEventLog()
        let (tnc, server, _) = try Self.makeTNC(wav: wav, events: log)
        for _ in 0..<5 { try tnc.step(timeoutMilliseconds: 1) }
        #expect(!tnc.isDecoding)
        #expect(tnc.currentStatistics.receiver.samples == 0)
        let a = try KISSTestClient(port: server.port)
        try tncPump(tnc, clients: [a]) { a.dataPayloads.count == 2 }
        #expect(tnc.isDecoding)
        #expect(a.dataPayloads.count == 2)
        try tnc.finish()
        #expect(log.lines.contains("decoding started"))
    }

    @Test("Garbage, then a valid frame: the garbage is counted and ignored, the frame is transmitted")
    func garbageThenValidFrame() throws {
        let wav = try TNCFixtures.wav(lines: [TNCFixtures.lines[0]], name: "garbage")
        defer { unlink(wav) }
        let log = TNCEventLog()
        let (tnc, server, sink) = try Self.makeTNC(wav: wav, events: log)
        let noisy = try KISSTestClient(port: server.port)
        let quiet = try KISSTestClient(port: server.port)
        try tncPump(tnc, clients: [noisy, quiet]) { tnc.inputEnded && quiet.dataPayloads.count == 1 }
        let frame = try AX25Frame(monitorLine: "N0CALL>APRS,WIDE1-1:sent by a client after garbage")
        var bytes: [UInt8] = Array("hello, this is not KISS\r\n".utf8)             // 25 bytes before any FEND
        bytes += [0xC0, 0x00, 0x41, 0xDB, 0x41, 0x42, 0xC0]                       // a bad escape
        bytes += [0xC0, 0x0E, 0x01, 0x02, 0xC0]                                   // an unknown command (14)
        bytes += KISSEncoder.encode(.data(frame.encode()))
        try noisy.send(bytes)
        try tncPump(tnc, clients: [noisy, quiet]) { tnc.currentStatistics.framesTransmitted == 1 }
        let stats = try tnc.finish()
        #expect(stats.framesTransmitted == 1)
        #expect(stats.kiss.garbageBytes >= 25)
        #expect(stats.kiss.badEscapes == 1)
        #expect(stats.kiss.unknownCommands == 1)
        #expect(sink.finished)
        #expect(try TNCFixtures.decode(sink.samples, sampleRate: sink.sampleRate) == [frame.monitorLine()])
        // The other client saw its frame, and no trace of the garbage.
        #expect(quiet.dataPayloads == [TNCFixtures.frames[0].encode()])
        #expect(!quiet.closedByServer)
        #expect(log.lines.contains { $0.contains("not KISS frames") })
    }

    @Test("Two clients sending at once: all frames are transmitted, in order per client")
    func twoSenders() throws {
        let wav = try TNCFixtures.wav(lines: [TNCFixtures.lines[0]], name: "senders")
        defer { unlink(wav) }
        let (tnc, server, sink) = try Self.makeTNC(wav: wav)
        let a = try KISSTestClient(port: server.port)
        let b = try KISSTestClient(port: server.port)
        try tncPump(tnc, clients: [a, b]) { tnc.inputEnded }
        let fa = (1...3).map { try! AX25Frame(monitorLine: "AAA>APRS:from a \($0)") }
        let fb = (1...3).map { try! AX25Frame(monitorLine: "BBB>APRS:from b \($0)") }
        // Frames split across writes, interleaved between the clients.
        let ba = fa.flatMap { KISSEncoder.encode(.data($0.encode())) }
        let bb = fb.flatMap { KISSEncoder.encode(.data($0.encode())) }
        try a.send(Array(ba[..<20])); try b.send(Array(bb[..<33]))
        try tncPump(tnc, clients: [a, b], seconds: 0.05) { false }
        try a.send(Array(ba[20...])); try b.send(Array(bb[33...]))
        try tncPump(tnc, clients: [a, b]) { tnc.currentStatistics.framesTransmitted == 6 }
        try tnc.finish()
        let got = try TNCFixtures.decode(sink.samples, sampleRate: sink.sampleRate)
        #expect(got.count == 6)
        #expect(got.filter { $0.hasPrefix("AAA") } == fa.map { $0.monitorLine() })
        #expect(got.filter { $0.hasPrefix("BBB") } == fb.map { $0.monitorLine() })
    }

    @Test("A client disconnecting mid-stream does not disturb the other", arguments: [false, true])
    func disconnectMidStream(reset: Bool) throws {
        let lines = (1...12).map { "N0CALL-\($0)>APRS:frame number \($0) of a longer stream" }
        let wav = try TNCFixtures.wav(lines: lines, name: "disconnect")
        defer { unlink(wav) }
        let log = TNCEventLog()
        var options = TNCOptions()
        options.blockSeconds = 0.05
        let (tnc, server, _) = try Self.makeTNC(wav: wav, options: options, events: log)
        let leaving = try KISSTestClient(port: server.port)
        let staying = try KISSTestClient(port: server.port)
        try tncPump(tnc, clients: [leaving, staying]) { leaving.dataPayloads.count >= 3 }
        #expect(!tnc.inputEnded)
        leaving.close(reset: reset)
        try tncPump(tnc, clients: [staying]) { tnc.inputEnded && staying.dataPayloads.count == lines.count }
        #expect(staying.dataPayloads.map { try! AX25Frame(decoding: $0).monitorLine() } == lines)
        #expect(server.connectedClients.count == 1)
        // The stayer can still transmit.
        try staying.send(KISSEncoder.encode(.data(try AX25Frame(monitorLine: "N0CALL>APRS:still here").encode())))
        try tncPump(tnc, clients: [staying]) { tnc.currentStatistics.framesTransmitted == 1 }
        try tnc.finish()
        #expect(log.lines.contains { $0.contains("client #1") && $0.contains("left") })
    }

    @Test("A client that reads too slowly is dropped; the others get everything")
    func slowClientIsDropped() throws {
        let server = try KISSServer(host: "127.0.0.1", port: 0, maximumOutputBytes: 4096, socketSendBufferBytes: 4096)
        let slow = try KISSTestClient(port: server.port, receiveBufferBytes: 4096)
        let fast = try KISSTestClient(port: server.port)
        _ = try tncPump(server, clients: [fast]) { $0.filter { if case .connected = $0 { true } else { false } }.count == 2 }
        #expect(server.connectedClients.count == 2)
        let payload = try AX25Frame(monitorLine: "N0CALL>APRS:" + String(repeating: "x", count: 200)).encode()
        var events: [KISSServerEvent] = []
        var sent = 0
        // The slow client never reads; the fast one reads between broadcasts.
        while sent < 2000, server.connectedClients.count == 2 {
            server.broadcast(.data(payload))
            sent += 1
            events += server.poll(timeoutMilliseconds: 0)
            fast.receive()
        }
        events += try tncPump(server, clients: [fast]) { _ in fast.dataPayloads.count == sent }
        let dropped = events.compactMap { e -> KISSDisconnectReason? in
            if case .disconnected(let c, let reason, _) = e, c.id == 1 { return reason }
            return nil
        }
        #expect(dropped.count == 1)
        if case .outputOverflow(_, let limit)? = dropped.first { #expect(limit == 4096) } else { Issue.record("\(dropped)") }
        #expect(server.clientsDroppedAsSlow == 1)
        #expect(server.connectedClients.map(\.id) == [2])
        #expect(fast.dataPayloads.count == sent)
        #expect(fast.dataPayloads.allSatisfy { $0 == payload })
        slow.receive()
        server.close()
    }

    @Test("Unbounded garbage, and a frame longer than AX.25 allows, cost bounded memory and are counted")
    func floodIsBounded() throws {
        let server = try KISSServer(host: "127.0.0.1", port: 0)
        let flooder = try KISSTestClient(port: server.port)
        var bytes = [UInt8](repeating: 0x55, count: 100_000)                 // no FEND at all
        bytes += [0xC0, 0x00] + [UInt8](repeating: 0x41, count: 5000) + [0xC0] // oversized
        let good = try AX25Frame(monitorLine: "N0CALL>APRS:after the flood").encode()
        bytes += KISSEncoder.encode(.data(good))
        try flooder.send(bytes)
        let events = try tncPump(server) { events in
            events.contains { if case .frame = $0 { true } else { false } }
        }
        let frames = events.compactMap { e -> KISSFrame? in if case .frame(let f, _) = e { return f } else { return nil } }
        #expect(frames == [.data(good)])
        #expect(server.kissStatistics.garbageBytes >= 100_000)
        #expect(server.kissStatistics.oversized == 1)
        #expect(events.contains { if case .firstGarbage = $0 { true } else { false } })
        server.close()
    }

    @Test("KISS TXDELAY sets the preamble; frames on other ports and non-AX.25 frames are rejected")
    func parametersAndRejections() throws {
        let wav = try TNCFixtures.wav(lines: [TNCFixtures.lines[0]], name: "params")
        defer { unlink(wav) }
        let log = TNCEventLog()
        var options = TNCOptions()
        options.gapSeconds = 0
        let (tnc, server, sink) = try Self.makeTNC(wav: wav, options: options, events: log)
        let c = try KISSTestClient(port: server.port)
        try tncPump(tnc, clients: [c]) { tnc.inputEnded }
        let frame = try AX25Frame(monitorLine: "N0CALL>APRS:txdelay")
        try c.send(KISSEncoder.encode(KISSFrame(command: .txDelay, payload: [10])))   // 100 ms
        try c.send(KISSEncoder.encode(.data(frame.encode())))
        try tncPump(tnc, clients: [c]) { tnc.currentStatistics.framesTransmitted == 1 }
        let short = sink.samples.count
        try c.send(KISSEncoder.encode(KISSFrame(command: .txDelay, payload: [60])))   // 600 ms
        try c.send(KISSEncoder.encode(.data(frame.encode())))
        try tncPump(tnc, clients: [c]) { tnc.currentStatistics.framesTransmitted == 2 }
        let long = sink.samples.count - short
        #expect(tnc.parameters.txDelay == 60)
        // 500 ms more of flags, within a flag or two.
        let extra = Double(long - short) / Double(sink.sampleRate)
        #expect(abs(extra - 0.5) < 0.02, "preamble grew by \(extra) s")
        // Rejections.
        try c.send(KISSEncoder.encode(.data(frame.encode(), port: 1)))
        try c.send(KISSEncoder.encode(.data([1, 2, 3])))
        try c.send(KISSEncoder.encode(KISSFrame(command: .persistence, payload: [255])))
        try c.send(KISSEncoder.encode(KISSFrame(command: .setHardware, payload: [1, 2])))
        try tncPump(tnc, clients: [c]) { tnc.currentStatistics.framesRejected == 2 && tnc.parameters.persistence == 255 }
        let stats = try tnc.finish()
        #expect(stats.framesRejected == 2)
        #expect(stats.framesTransmitted == 2)
        #expect(stats.parametersSet == 3)
        #expect(try TNCFixtures.decode(sink.samples, sampleRate: sink.sampleRate) == [frame.monitorLine(), frame.monitorLine()])
        #expect(log.lines.contains { $0.contains("port 1") })
        #expect(log.lines.contains { $0.contains("not an AX.25 frame") })
        #expect(log.lines.contains { $0.contains("TXDELAY 60 (600 ms)") })
    }

    @Test("Receive only: data frames are rejected, not queued")
    func receiveOnly() throws {
        let wav = try TNCFixtures.wav(lines: [TNCFixtures.lines[0]], name: "rxonly")
        defer { unlink(wav) }
        let server = try KISSServer(host: "127.0.0.1", port: 0)
        let tnc = try TNC(settings: TNCFixtures.settings, source: try AudioFileReader(path: wav), sink: nil, server: server)
        let c = try KISSTestClient(port: server.port)
        try c.send(KISSEncoder.encode(.data(TNCFixtures.frames[0].encode())))
        try tncPump(tnc, clients: [c]) { tnc.inputEnded && tnc.currentStatistics.framesRejected == 1 && c.dataPayloads.count == 1 }
        #expect(tnc.queuedFrames == 0)
        let stats = try tnc.finish()
        #expect(stats.framesRejected == 1)
        #expect(stats.receiver.decoded == 1)
    }

    @Test("finish() closes the sockets and writes a valid WAV file")
    func finishWritesValidWAV() throws {
        let wav = try TNCFixtures.wav(lines: [TNCFixtures.lines[0]], name: "finish-in")
        let out = wav.replacingOccurrences(of: "finish-in", with: "finish-out")
        defer { unlink(wav); unlink(out) }
        let server = try KISSServer(host: "127.0.0.1", port: 0)
        let writer = try AudioFileWriter(path: out, sampleRate: 22050)
        let tnc = try TNC(settings: TNCFixtures.settings, source: try AudioFileReader(path: wav), sink: writer, server: server)
        let c = try KISSTestClient(port: server.port)
        let frame = try AX25Frame(monitorLine: "N0CALL>APRS:to a file at 22050 Hz")
        try c.send(KISSEncoder.encode(.data(frame.encode())))
        try tncPump(tnc, clients: [c]) { tnc.currentStatistics.framesTransmitted == 1 }
        var stopAfter = 3
        let stats = try tnc.run(shouldStop: { stopAfter -= 1; return stopAfter < 0 })
        #expect(stats.framesTransmitted == 1)
        #expect(server.isClosed)
        c.receive()
        #expect(c.closedByServer)
        let reader = try AudioFileReader(path: out)
        #expect(reader.sampleRate == 22050)
        var samples = [Float](repeating: 0, count: Int(reader.declaredFrameCount))
        let n = try samples.withUnsafeMutableBufferPointer { try reader.read(into: $0) }
        #expect(n == samples.count && n > 0)
        #expect(try TNCFixtures.decode(samples, sampleRate: 22050) == [frame.monitorLine()])
    }

    @Test("Too many clients: the extra connection is refused, the others stay")
    func maximumClients() throws {
        let server = try KISSServer(host: "127.0.0.1", port: 0, maximumClients: 2)
        let a = try KISSTestClient(port: server.port)
        let b = try KISSTestClient(port: server.port)
        let c = try KISSTestClient(port: server.port)
        let events = try tncPump(server, clients: [a, b, c]) { _ in c.closedByServer }
        #expect(c.closedByServer)
        #expect(events.contains { if case .refused = $0 { true } else { false } })
        #expect(server.connectedClients.count == 2)
        #expect(server.clientsRefused == 1)
        #expect(server.broadcast(.data([1])) == 2)
        server.close()
    }

    @Test("Errors: a port in use, an address that is not ours")
    func listenErrors() throws {
        let first = try KISSServer(host: "127.0.0.1", port: 0)
        #expect(first.address == "127.0.0.1:\(first.port)")
        do {
            _ = try KISSServer(host: "127.0.0.1", port: first.port)
            Issue.record("a second server on the same port started")
        } catch {
            #expect(error.kind == .addressInUse)
            #expect(error.code == EADDRINUSE)
            #expect(error.description.contains("in use"))
        }
        do {
            _ = try KISSServer(host: "no.such.host.invalid", port: 0)
            Issue.record("an unresolvable address was accepted")
        } catch {
            #expect(error.kind == .invalidAddress)
        }
        do {
            _ = try KISSServer(host: "192.0.2.1", port: 0)  // TEST-NET-1, not this machine's
            Issue.record("a foreign address was accepted")
        } catch {
            #expect(error.kind == .invalidAddress)
        }
        first.close()
        first.close()
    }
}

/// The events a TNC reported, as text.
final class TNCEventLog: @unchecked Sendable {
    private(set) var lines: [String] = []
    func append(_ event: TNCEvent) { lines.append(event.description) }
}

@Suite("TNC channel access and carrier detection")
struct TNCChannelTests {
    static let rate = 44100

    @Test("p-persistent CSMA: busy defers, persistence 255 goes at once, full duplex ignores the channel")
    func channelAccess() {
        var g = SplitMix64(seed: 1)
        var access = TNCChannelAccess()
        var p = TNCParameters(persistence: 255)
        #expect(access.decide(now: 0, channelBusy: true, parameters: p, sampleRate: Self.rate, using: &g) == .wait)
        #expect(access.decide(now: 100, channelBusy: true, parameters: p, sampleRate: Self.rate, using: &g) == .wait)
        #expect(access.busyDeferrals == 1)
        #expect(access.decide(now: 200, channelBusy: false, parameters: p, sampleRate: Self.rate, using: &g) == .transmit)
        p.fullDuplex = true
        #expect(access.decide(now: 300, channelBusy: true, parameters: p, sampleRate: Self.rate, using: &g) == .transmit)
    }

    @Test("p-persistent CSMA: a lost draw waits one slot time; the share of slots won is about (p+1)/256")
    func persistenceAndSlots() {
        var g = SplitMix64(seed: 7)
        var access = TNCChannelAccess()
        let p = TNCParameters(persistence: 63, slotTime: 10)   // p = 0.25, slots of 100 ms
        let slot = Self.rate / 10
        // Find a lost draw, then check the slot is waited out.
        var now = 0
        while access.decide(now: now, channelBusy: false, parameters: p, sampleRate: Self.rate, using: &g) == .transmit {
            access.reset()
            now += 1
        }
        #expect(access.decide(now: now + slot - 1, channelBusy: false, parameters: p, sampleRate: Self.rate, using: &g) == .wait)
        #expect(access.slotsWaited == 1)
        // Over many slots, about a quarter are won.
        access.reset()
        var won = 0
        for i in 0..<4000 {
            if access.decide(now: i * slot * 2, channelBusy: false, parameters: p, sampleRate: Self.rate, using: &g) == .transmit {
                won += 1
                access.reset()
            }
        }
        #expect((800...1200).contains(won), "won \(won) of 4000")
    }

    @Test("Carrier detect: AFSK is busy, silence and white noise are clear", arguments: [22050, 44100, 48000])
    func carrierDetect(sampleRate: Int) throws {
        let config = try TNCFixtures.settings.configuration(sampleRate: sampleRate)
        let afsk = try TNCFixtures.afsk(TNCFixtures.frames[1].encode(), sampleRate: config.sampleRate, txDelayMilliseconds: 100,
                                         txTailMilliseconds: 30)
        var detector = CarrierDetector(configuration: config)
        afsk.withUnsafeBufferPointer { detector.process(UnsafeBufferPointer(rebasing: $0[0..<(afsk.count / 2)])) }
        #expect(detector.isBusy, "score \(detector.score)")
        let silence = [Float](repeating: 0, count: sampleRate / 10)
        silence.withUnsafeBufferPointer { detector.process($0) }
        #expect(!detector.isBusy, "score \(detector.score)")
        var g = SplitMix64(seed: 3)
        let noise = (0..<sampleRate).map { _ in Float(g.gaussian() * 0.3) }
        var fresh = CarrierDetector(configuration: config)
        var busyBlocks = 0
        for start in stride(from: 0, to: noise.count, by: 441) {
            noise.withUnsafeBufferPointer { fresh.process(UnsafeBufferPointer(rebasing: $0[start..<min(noise.count, start + 441)])) }
            if fresh.isBusy { busyBlocks += 1 }
        }
        #expect(busyBlocks == 0, "noise seen as carrier in \(busyBlocks) blocks, score \(fresh.score)")
        fresh.reset()
        #expect(!fresh.isBusy && fresh.score == 0)
    }

    @Test("On a channel, a frame waits while the receiver hears a carrier, then goes out")
    func channelOutputWaitsForClearChannel() throws {
        let rate = 44100
        let config = try TNCFixtures.settings.configuration(sampleRate: rate)
        // The channel: 1 s of someone else's AFSK, then 1 s of silence.
        var channel = try TNCFixtures.afsk(TNCFixtures.frames[1].encode(), sampleRate: config.sampleRate, txDelayMilliseconds: 700,
                                            txTailMilliseconds: 30)
        channel = Array(channel.prefix(rate))
        channel += [Float](repeating: 0, count: 2 * rate)
        let source = MemorySource(channel, sampleRate: rate)
        let sink = MemorySink(sampleRate: rate)
        let server = try KISSServer(host: "127.0.0.1", port: 0)
        var options = TNCOptions()
        options.outputIsChannel = true
        options.waitsForFirstClient = false
        options.blockSeconds = 0.02
        options.randomSeed = 5
        options.parameters = TNCParameters(txDelay: 20, persistence: 255)
        let tnc = try TNC(settings: TNCFixtures.settings, source: source, sink: sink, server: server, options: options)
        let c = try KISSTestClient(port: server.port)
        let frame = try AX25Frame(monitorLine: "N0CALL>APRS:polite")
        try c.send(KISSEncoder.encode(.data(frame.encode())))
        try tncPump(tnc, clients: [c]) { tnc.inputEnded }
        let stats = try tnc.finish()
        #expect(stats.framesTransmitted == 1)
        #expect(stats.busyDeferrals >= 1)
        // Output follows the input sample for sample (plus 50 ms of priming silence), and is silent
        // while the other station is on the air.
        let prime = rate / 20
        #expect(sink.samples.count >= channel.count)
        let firstSound = sink.samples.firstIndex { $0 != 0 } ?? -1
        #expect(firstSound >= prime + rate, "transmitted at sample \(firstSound), the channel was busy until \(prime + rate)")
        #expect(try TNCFixtures.decode(sink.samples, sampleRate: rate) == [frame.monitorLine()])
    }

    @Test("The transmit queue is bounded: beyond it frames are rejected; frames still waiting at the end are dropped")
    func queueIsBounded() throws {
        let rate = 22050
        let config = try TNCFixtures.settings.configuration(sampleRate: rate)
        // A channel that is busy all the time.
        let busy = try TNCFixtures.afsk(TNCFixtures.frames[1].encode(), sampleRate: config.sampleRate, txDelayMilliseconds: 2000,
                                         txTailMilliseconds: 30)
        let sink = MemorySink(sampleRate: rate)
        let server = try KISSServer(host: "127.0.0.1", port: 0)
        var options = TNCOptions()
        options.outputIsChannel = true
        options.waitsForFirstClient = false
        options.maximumQueuedFrames = 2
        let log = TNCEventLog()
        let tnc = try TNC(settings: TNCFixtures.settings, source: MemorySource(busy, sampleRate: rate), sink: sink,
                          server: server, options: options, onEvent: { log.append($0) })
        let c = try KISSTestClient(port: server.port)
        for i in 1...4 {
            try c.send(KISSEncoder.encode(.data(try AX25Frame(monitorLine: "N0CALL>APRS:queued \(i)").encode())))
        }
        try tncPump(tnc, clients: [c]) { tnc.currentStatistics.framesRejected == 2 }
        for _ in 0..<5 { try tnc.step(timeoutMilliseconds: 1) }
        #expect(tnc.queuedFrames == 2)
        #expect(!tnc.inputEnded)
        let stats = try tnc.finish()
        #expect(stats.framesTransmitted == 0)
        #expect(stats.framesRejected == 4)
        #expect(log.lines.filter { $0.contains("queue is full") }.count == 2)
        #expect(log.lines.filter { $0.contains("before the channel was free") }.count == 2)
    }
}
