import Foundation
import ModemAudio
import ModemDSP
import ModemLink
import ModemMessaging
import ModemMessagingHarness
import ModemRuntime
import ModemTransport
import Synchronization
import Testing
import ModemRuntime

/// LinkTransport: one frame per duplex message over the in-memory medium in channel time (each test
/// runs in the pair's simulation: its figures are the same on any machine).
@Suite struct LinkTransportTests {
    static func frame(_ size: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    static func duplex(baud: Double) -> LinkConfiguration {
        LinkConfiguration(mode: .duplex, baudRate: baud)
    }

    /// Connects both ends of a pair.
    static func connect(_ pair: LinkLoopbackPair) async throws -> (phone: LinkTransport, device: LinkTransport) {
        async let device = pair.accept()
        let phone = try await pair.dial()
        return (phone, try await device)
    }

    /// Reads until a frame comes; counts `.peerHeard` seen before it.
    static func nextFrame(_ t: LinkTransport) async -> (frame: [UInt8]?, heard: Int, end: TransportEnd?) {
        var heard = 0
        while true {
            switch await t.receive() {
            case .frame(let f): return (f, heard, nil)
            case .peerHeard: heard += 1
            case .ended(let e): return (nil, heard, e)
            }
        }
    }

    @Test func sixteenKiBFramesBothWaysAt1200BaudWithPeerHeard() async throws {
        let pair = try LinkLoopbackPair(configuration: Self.duplex(baud: 1200))
        try await pair.run { pair in
            let (phone, device) = try await Self.connect(pair)
            #expect(phone.kind == .link && phone.role == .phone && device.role == .device)
            let a = Self.frame(16 * 1024 - 64, seed: 1), b = Self.frame(16 * 1024 - 64, seed: 2)
            let t0 = pair.now
            async let sentA: UInt16 = phone.sendMessage(a)
            async let sentB: UInt16 = device.sendMessage(b)
            async let atDevice = Self.nextFrame(device)
            async let atPhone = Self.nextFrame(phone)
            let (ga, gb) = (await atDevice, await atPhone)
            let (ma, mb) = try await (sentA, sentB)
            let seconds = pair.now - t0
            #expect(ga.frame == a)
            #expect(gb.frame == b)
            #expect(ma != 0 && mb != 0)
            // The peer was heard (fragments) long before the whole 16 KiB message arrived.
            #expect(ga.heard >= 1 && gb.heard >= 1)
            // About 113 s of air time each way at once, both lines in use.
            #expect(seconds > 100 && seconds < 140, "channel seconds \(seconds)")
            // Order is kept: a second frame follows.
            try await phone.send([7, 7, 7])
            #expect(await Self.nextFrame(device).frame == [7, 7, 7])
            await phone.close()
            #expect(await Self.nextFrame(device).end == .peerClosed)
            #expect(await phone.receive() == .ended(.localClose))
        }
    }

    @Test func aMutedLineEndsBothTransports() async throws {
        let options = LinkTransportOptions(keepalive: 5)
        let pair = try LinkLoopbackPair(configuration: Self.duplex(baud: 4800), options: options)
        try await pair.run { pair in
            let (phone, device) = try await Self.connect(pair)
            try await phone.send([1, 2, 3])
            #expect(await Self.nextFrame(device).frame == [1, 2, 3])
            let cutAt = pair.now
            pair.mute(seconds: 30)
            let (p, d) = (await Self.nextFrame(phone), await Self.nextFrame(device))
            guard case .localFailure(let why)? = p.end, case .localFailure? = d.end else {
                Issue.record("expected local failures, got \(String(describing: p.end)) / \(String(describing: d.end))")
                return
            }
            #expect(why.contains("silent"))
            // Ended after the silence timeout (2 x keepalive), well before the cut was over.
            #expect(pair.now - cutAt >= 10 && pair.now - cutAt < 30)
            do {
                try await phone.send([9])
                Issue.record("a send on an ended transport succeeded")
            } catch {}
            // After the cut the phone opens again and a new connection works.
            await pair.lineRestored()
            let (phone2, device2) = try await Self.connect(pair)
            try await device2.send([4, 5])
            #expect(await Self.nextFrame(phone2).frame == [4, 5])
        }
    }

    @Test func keepaliveKeepsAnIdleLinkOpen() async throws {
        let pair = try LinkLoopbackPair(configuration: Self.duplex(baud: 4800), options: LinkTransportOptions(keepalive: 2))
        try await pair.run { pair in
            let (phone, device) = try await Self.connect(pair)
            let t0 = pair.now
            // Nothing sent for 10 x the silence timeout: the empty keepalive messages are heard, not read.
            var heard = 0
            while pair.now - t0 < 40 {
                switch await device.receive() {
                case .peerHeard: heard += 1
                case .frame(let f): Issue.record("unexpected frame \(f)")
                case .ended(let e): Issue.record("ended \(e)"); return
                }
            }
            #expect(heard >= 5)
            #expect(!phone.isEnded && !device.isEnded)
        }
    }

    @Test func aReaderThatStopsReadingHoldsTheSender() async throws {
        let options = LinkTransportOptions(keepalive: 30, inboxLimit: 2)
        let pair = try LinkLoopbackPair(configuration: Self.duplex(baud: 4800), options: options)
        try await pair.run { pair in
            let (phone, device) = try await Self.connect(pair)
            let frames = (0..<6).map { Self.frame(2000, seed: UInt64($0)) }
            let acknowledged = Mutex(0)
            let sender = Simulation.spawn {
                for f in frames {
                    try await phone.send(f)
                    acknowledged.withLock { $0 += 1 }
                }
            }
            // Nobody reads for 60 s of channel time: 6 frames take about 25 s on the air, but only the
            // inbox's 2 complete.
            try await pair.clock.sleep(for: .seconds(60))
            #expect(acknowledged.withLock { $0 } == 2)
            // Reading releases them, in order, none lost.
            for f in frames { #expect(await Self.nextFrame(device).frame == f) }
            try await sender.value
            #expect(acknowledged.withLock { $0 } == 6)
        }
    }

    @Test func emptyAndOversizedFramesAreRefused() async throws {
        let pair = try LinkLoopbackPair(configuration: Self.duplex(baud: 4800))
        try await pair.run { pair in
            let (phone, _) = try await Self.connect(pair)
            await #expect(throws: TransportError.emptyFrame) { try await phone.send([]) }
            await #expect(throws: TransportError.frameTooLarge(size: 65_561, maximum: 65_560)) {
                try await phone.send([UInt8](repeating: 1, count: phone.maximumFrameSize + 1))
            }
            #expect(phone.maximumFrameSize == 65_560)
        }
    }

    @Test func phoneAndDeviceOverAudioPipes() async throws {
        let config = Self.duplex(baud: 4800)
        let toDevice = AudioPipe(sampleRate: 48000), toPhone = AudioPipe(sampleRate: 48000)
        let device = try LinkDevice(configuration: config, sink: toPhone.sink, source: toDevice.source)
        let phone = try LinkPhone(configuration: config, sink: toDevice.sink, source: toPhone.source)
        device.start()
        phone.start()
        defer { phone.stop(); device.stop() }
        async let accepted = device.accept()
        let p = try await phone.dial()
        let d = try await accepted
        let a = Self.frame(3000, seed: 5)
        try await p.send(a)
        #expect(await Self.nextFrame(d).frame == a)
        try await d.send([1])
        #expect(await Self.nextFrame(p).frame == [1])
    }

    @Test func transferTestWithACutResumesAndMatches() async throws {
        // Over Noise sessions and data connections, and over plain records with the harness's blocks.
        for plain in [false, true] {
            let options = TransferTestOptions(baudRate: 4800, size: 60_000, cuts: 1, seed: 4, keepalive: 5, plain: plain)
            let report = try await TransferTest(options: options).run()
            #expect(report.completed && report.sha256Match, "plain \(plain)")
            #expect(report.delivered == 60_000)
            #expect(report.cuts == 1 && report.resumes >= 1, "plain \(plain): \(report.json)")
            #expect(report.bytesResent <= report.cuts * report.blockSize)
            #expect(report.channelSeconds > 3 * 5)
            #expect(report.json.hasPrefix("{\"bytes\":60000,\"delivered\":60000,\"sha256Match\":true,\"cuts\":1,"))
        }
    }

    @Test("transfer-test gives up after --give-up seconds of channel time without a verified block, and says so")
    func transferTestGivesUpOnAHopelessChannel() async throws {
        // 90 % frame loss: no session gets through. Channel time, so the end is where it was set
        // however busy the machine is.
        for plain in [false, true] {
            let options = TransferTestOptions(baudRate: 4800, size: 2000, frameLoss: 0.9, seed: 1, keepalive: 5,
                                              plain: plain, giveUpSeconds: 60)
            let report = try await TransferTest(options: options).run()
            #expect(!report.completed && report.endedEarly == .gaveUp, "plain \(plain): \(report.json)")
            #expect(report.channelSeconds >= 59 && report.channelSeconds < 61, "plain \(plain): \(report.json)")
            #expect(report.json.hasSuffix(",\"completed\":false,\"framesLost\":\(report.framesLost),\"retransmissions\":\(report.retransmissions),\"endedEarly\":\"gave-up\"}"))
        }
        #expect(TransferTestOptions(baudRate: 1200, size: 1 << 20, forwardErrorCorrection: .off).defaultGiveUpSeconds.rounded() == 899)
        // Coded frames (FEC on or auto) take 2.3 times the air time: 300 + 5 x 2.3 x 119.8 s.
        #expect(TransferTestOptions(baudRate: 1200, size: 1 << 20).defaultGiveUpSeconds.rounded() == 1678)
        #expect(throws: TransferTestError.self) { try TransferTestOptions(size: 10, giveUpSeconds: 0).validate() }
        #expect(throws: TransferTestError.self) { try TransferTestOptions(size: 10, giveUpSeconds: .infinity).validate() }
    }

    @Test("transfer-test ends when its stop condition holds, with the counts so far")
    func transferTestStopsWhenAsked() async throws {
        final class Flag: Sendable { let raised = Atomic<Bool>(false) }
        let flag = Flag()
        let options = TransferTestOptions(baudRate: 4800, size: 60_000, seed: 2, keepalive: 5)
        let report = try await TransferTest(options: options).run(stopWhen: { flag.raised.load(ordering: .relaxed) }) { r in
            if r.delivered > 0 { flag.raised.store(true, ordering: .relaxed) }
        }
        #expect(!report.completed && report.endedEarly == .interrupted, "\(report.json)")
        #expect(report.delivered >= 16_256 && report.delivered < 60_000, "\(report.json)")
        #expect(report.json.hasSuffix("\"endedEarly\":\"interrupted\"}"))
    }
}
