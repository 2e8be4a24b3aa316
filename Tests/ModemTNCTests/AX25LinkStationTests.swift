import Testing
import ModemCodecs
import ModemRuntime
@testable import ModemTNC

/// Two stations on a simulated 1200 bit/s half-duplex channel in virtual time (`AX25SimulatedChannel`).
@Suite("AX25Link stations")
struct AX25LinkStationTests {
    typealias Fx = AX25LinkFixtures
    static let a = Fx.a, b = Fx.b

    static func isU(_ u: AX25LinkFrame.Unnumbered) -> (AX25LinkFrame.Header) -> Bool { { $0.unnumbered == u } }
    static func isS(_ s: AX25LinkFrame.Supervisory) -> (AX25LinkFrame.Header) -> Bool {
        { !$0.isUnnumbered && $0.control & 1 == 1 && $0.control >> 2 & 3 == s.rawValue }
    }

    @Test("Connect with SABME, negotiate XID to modulo 128 with SREJ, disconnect from the caller")
    func connectV22() {
        var ch = Fx.pair()
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        #expect(ch.run(until: 60) { $0.connected(0) && $0.connected(1) && $0.stations[0].link(from: Self.a, to: Self.b)?.nextDeadline != nil && $0.air.isEmpty })
        let la = ch.stations[0].link(from: Self.a, to: Self.b)!, lb = ch.stations[1].link(from: Self.b, to: Self.a)!
        #expect(la.modulo == .oneTwentyEight && lb.modulo == .oneTwentyEight)
        #expect(la.selectiveReject && lb.selectiveReject)
        #expect(la.window == 32 && la.maxInformationBytes == 256 && la.retries == 10)
        #expect(ch.count(0, where: Self.isU(.sabme)) == 1 && ch.count(0, where: Self.isU(.xid)) == 1)
        #expect(ch.count(1, where: Self.isU(.xid)) == 1 && ch.count(1, where: Self.isU(.ua)) == 1)
        #expect(ch.events[1].contains(.connected(local: Self.b, remote: Self.a, incoming: true)))
        #expect(ch.events[0].contains(.connected(local: Self.a, remote: Self.b, incoming: false)))
        ch.act(0) { $0.disconnect(from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 120) { $0.disconnectReason(0) != nil && $0.disconnectReason(1) != nil }
        #expect(ch.disconnectReason(0) == .requested)
        #expect(ch.disconnectReason(1) == .peerDisconnected)
        #expect(ch.stations[0].links.isEmpty && ch.stations[1].links.isEmpty)
    }

    @Test("Connect with SABM (v2.0 preferred), data, and the called end disconnects")
    func connectV20CalledDisconnects() {
        var p = AX25LinkParameters()
        p.preferV22 = false
        var ch = Fx.pair(p)
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 60) { $0.connected(0) && $0.connected(1) }
        #expect(ch.stations[0].link(from: Self.a, to: Self.b)?.modulo == .eight)
        #expect(ch.count(0, where: Self.isU(.xid)) == 0)
        ch.act(1) { $0.send(Array("hello".utf8), from: Self.b, to: Self.a, now: $1) }
        ch.run(until: 120) { $0.data(0).count == 5 }
        #expect(ch.data(0) == Array("hello".utf8))
        ch.act(1) { $0.disconnect(from: Self.b, to: Self.a, now: $1) }
        ch.run(until: 200) { $0.disconnectReason(0) != nil && $0.disconnectReason(1) != nil }
        #expect(ch.disconnectReason(1) == .requested)
        #expect(ch.disconnectReason(0) == .peerDisconnected)
    }

    enum OldPeer: String, CaseIterable { case answersDM, answersFRMR, ignoresSABME }

    @Test("A v2.0 peer: SABME answered by DM or FRMR, or ignored, falls back to SABM and modulo 8", arguments: OldPeer.allCases)
    func fallback(peer: OldPeer) {
        var pb = AX25LinkParameters()
        pb.acceptV22 = false
        var ch = Fx.pair(AX25LinkParameters(), pb)
        let sabmeDM = AX25LinkFrame(destination: Self.a, source: Self.b, commandResponse: .response, pollFinal: true,
                                    kind: .unnumbered(.dm, pid: nil, info: [])).encode()
        switch peer {
        case .answersDM:
            break
        case .answersFRMR:
            let frmr = AX25LinkFrame(destination: Self.a, source: Self.b, commandResponse: .response, pollFinal: true,
                                     kind: .unnumbered(.frmr, pid: nil, info: [0x6F, 0x00, 0x01])).encode()
            ch.rewrite = { i, bytes in i == 1 && bytes == sabmeDM ? [frmr] : nil }
        case .ignoresSABME:
            ch.rewrite = { i, bytes in i == 1 && bytes == sabmeDM ? [] : nil }
        }
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        #expect(ch.run(until: 120) { $0.connected(0) && $0.connected(1) })
        #expect(ch.stations[0].link(from: Self.a, to: Self.b)?.modulo == .eight)
        #expect(ch.stations[1].link(from: Self.b, to: Self.a)?.modulo == .eight)
        #expect(ch.count(0, where: Self.isU(.sabm)) == 1)
        #expect(ch.count(0, where: Self.isU(.sabme)) == (peer == .ignoresSABME ? 1 + AX25LinkParameters().maxV22Attempts : 1))
        #expect(ch.count(0, where: Self.isU(.xid)) == 0)
        #expect(ch.events[0].contains(.error(local: Self.a, remote: Self.b, problem: .fallingBackToV20)))
        let text = Fx.payload(3000, seed: 9)
        ch.act(0) { $0.send(text, from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 600) { $0.data(1).count == text.count }
        #expect(ch.data(1) == text, "\(ch.data(1).count) bytes")
    }

    struct Transfer: CustomTestStringConvertible, Sendable {
        var loss: Double
        var seed: UInt64
        var v22: Bool
        var testDescription: String { "\(Int(loss * 100)) % loss, seed \(seed), \(v22 ? "mod 128 SREJ" : "mod 8 REJ")" }
    }

    /// No loss, then 10 % and 20 % frame loss with four seeds each, for modulo 128 (SREJ) and modulo 8 (REJ).
    static let transfers: [Transfer] = [Transfer(loss: 0, seed: 1, v22: true), Transfer(loss: 0, seed: 1, v22: false)]
        + [0.1, 0.2].flatMap { loss in (1...4).flatMap { seed in [true, false].map { Transfer(loss: loss, seed: UInt64(seed), v22: $0) } } }

    @Test("20 KiB both ways at once, byte-exact, through frame loss", arguments: transfers)
    func transfer(_ t: Transfer) {
        var p = AX25LinkParameters()
        p.preferV22 = t.v22
        p.windowModulo128 = 8
        var ch = Fx.pair(p, p, loss: t.loss, seed: t.seed)
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        #expect(ch.run(until: 300) { $0.connected(0) && $0.connected(1) })
        let ab = Fx.payload(20 * 1024, seed: t.seed * 2), ba = Fx.payload(20 * 1024, seed: t.seed * 2 + 1)
        ch.act(0) { $0.send(ab, from: Self.a, to: Self.b, now: $1) }
        ch.act(1) { $0.send(ba, from: Self.b, to: Self.a, now: $1) }
        let start = ch.now
        let done = ch.run(until: 20_000) {
            $0.data(1).count >= ab.count && $0.data(0).count >= ba.count
                && $0.stations[0].outstandingFrames(from: Self.a, to: Self.b) == 0
                && $0.stations[1].outstandingFrames(from: Self.b, to: Self.a) == 0
        }
        #expect(done, "\(t.testDescription): \(ch.data(1).count) and \(ch.data(0).count) bytes after \(ch.now - start) s")
        let exact = ch.data(1) == ab && ch.data(0) == ba
        #expect(exact)
        if !done || !exact { print(ch.trace.suffix(60).joined(separator: "\n")) }
        #expect(ch.disconnectReason(0) == nil && ch.disconnectReason(1) == nil)
        let link = ch.stations[0].link(from: Self.a, to: Self.b)
        #expect(link?.modulo == (t.v22 ? .oneTwentyEight : .eight))
        if t.loss > 0 {
            let recovery = t.v22 ? Self.isS(.srej) : Self.isS(.rej)
            #expect(ch.count(0, where: recovery) + ch.count(1, where: recovery) > 0)
        }
        // Airtime of 40 KiB at 1200 bit/s is 273 s; loss and acknowledgements cost more, within reason.
        #expect(ch.now - start < 273 * (t.loss == 0 ? 1.6 : 4))
    }

    @Test("A peer that vanishes: T1 polls N2 times, then the link ends with retries exhausted")
    func peerVanishes() {
        var ch = Fx.pair()
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 60) { $0.connected(0) && $0.connected(1) && $0.air.isEmpty }
        ch.deaf = [1]
        let polls = ch.count(0, where: Self.isS(.rr))
        ch.act(0) { $0.send(Array("anyone?".utf8), from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 2000) { $0.disconnectReason(0) != nil }
        #expect(ch.disconnectReason(0) == .retriesExhausted)
        #expect(ch.count(0, where: Self.isS(.rr)) - polls == 10)
        #expect(ch.count(0, where: Self.isU(.dm)) == 1)
        #expect(ch.stations[0].links.isEmpty)
    }

    @Test("Connecting to a silent call gives up after N2 tries (SABME, then SABM)")
    func nobodyThere() {
        var ch = Fx.pair()
        ch.act(0) { $0.connect(from: Self.a, to: Fx.call("K9XYZ"), now: $1) }
        ch.run(until: 2000) { $0.disconnectReason(0) != nil }
        #expect(ch.disconnectReason(0) == .retriesExhausted)
        #expect(ch.count(1, where: { _ in true }) == 0)
        // As Dire Wolf: N2 + 1 tries in all, the first 1 + MAXV22 of them SABME (the retry count carries on).
        #expect(ch.count(0, where: Self.isU(.sabme)) == 1 + 3)
        #expect(ch.count(0, where: Self.isU(.sabm)) == 10 - 3)
    }

    @Test("DM when connecting to an unregistered call (with answerUnregisteredWithDM) and beyond maxLinks")
    func refusedByDM() {
        var pb = AX25LinkParameters()
        pb.answerUnregisteredWithDM = true
        pb.maxLinks = 1
        var ch = Fx.pair(AX25LinkParameters(), pb)
        ch.act(0) { $0.connect(from: Self.a, to: Fx.call("W1AW-8"), now: $1) }
        ch.run(until: 60) { $0.disconnectReason(0) != nil }
        #expect(ch.disconnectReason(0) == .refused)
        #expect(ch.count(1, where: Self.isU(.dm)) == 2)  // SABME, then SABM
        // One link fits; a second caller is refused with DM.
        ch.events = [[], []]
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 120) { $0.connected(1) && $0.air.isEmpty }
        ch.act(0) { $0.connect(from: Fx.call("N0CALL-2"), to: Self.b, now: $1) }
        ch.run(until: 240) { $0.disconnectReason(0) != nil }
        #expect(ch.disconnectReason(0) == .refused)
        #expect(ch.stations[1].links.count == 1)
        // A station's own caps refuse clearly.
        var s = AX25LinkStation(parameters: pb)
        _ = s.connect(from: Self.a, to: Self.b, now: 0)
        #expect(s.connect(from: Self.a, to: Fx.call("K9XYZ"), now: 0) == [.refused(local: Self.a, remote: Fx.call("K9XYZ"), reason: .tooManyLinks)])
        #expect(s.connect(from: Self.a, to: Self.b, now: 0) == [.refused(local: Self.a, remote: Self.b, reason: .alreadyConnected)])
        #expect(s.send(Array(repeating: 0, count: 70_000), from: Self.a, to: Self.b, now: 0)
            == [.refused(local: Self.a, remote: Self.b, reason: .queueFull)])
        #expect(s.send([1], from: Self.b, to: Self.a, now: 0) == [.refused(local: Self.b, remote: Self.a, reason: .notConnected)])
    }

    @Test("RNR: a busy receiver stops the sender; RR lets it finish")
    func receiverBusy() {
        var ch = Fx.pair()
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 60) { $0.connected(1) && $0.air.isEmpty }
        ch.act(1) { $0.setReceiverBusy(true, from: Self.b, to: Self.a, now: $1) }
        ch.run(until: 120) { $0.air.isEmpty }
        #expect(ch.stations[0].link(from: Self.a, to: Self.b)?.peerBusy == true)
        let text = Fx.payload(2000, seed: 5)
        ch.act(0) { $0.send(text, from: Self.a, to: Self.b, now: $1) }
        ch.run(until: ch.now + 100)
        #expect(ch.data(1).isEmpty)
        #expect(ch.stations[0].outstandingFrames(from: Self.a, to: Self.b) == 8)
        ch.act(1) { $0.setReceiverBusy(false, from: Self.b, to: Self.a, now: $1) }
        ch.run(until: ch.now + 300) { $0.data(1).count == text.count && $0.stations[0].outstandingFrames(from: Self.a, to: Self.b) == 0 }
        #expect(ch.data(1) == text, "\(ch.data(1).count) bytes")
        #expect(ch.count(1, where: Self.isS(.rnr)) >= 1)
        #expect(ch.disconnectReason(0) == nil)
    }

    @Test("T3: an idle link is probed with RR P=1 after 300 s and stays up")
    func idleProbe() {
        var ch = Fx.pair()
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 60) { $0.connected(1) && $0.air.isEmpty }
        let t = ch.now
        ch.run(until: t + 350)
        let probes = ch.sent[0].filter { Self.isS(.rr)($0) && $0.destination.highBit }
        #expect(probes.count >= 1)
        #expect(ch.stations[0].link(from: Self.a, to: Self.b)?.state == .connected)
        #expect(ch.stations[1].link(from: Self.b, to: Self.a)?.state == .connected)
        #expect(ch.disconnectReason(0) == nil && ch.disconnectReason(1) == nil)
    }

    @Test("Data longer than N1 goes in several I frames; PID kept")
    func segments() {
        var p = AX25LinkParameters()
        p.preferV22 = false
        var ch = Fx.pair(p, p)
        ch.act(0) { $0.connect(from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 60) { $0.connected(1) }
        let text = Fx.payload(1000, seed: 7)
        ch.act(0) { $0.send(text, pid: 0xCF, from: Self.a, to: Self.b, now: $1) }
        ch.run(until: 300) { $0.data(1).count == text.count }
        let pieces = ch.events[1].compactMap { if case .data(_, _, let pid, let b) = $0 { (pid, b.count) } else { nil } }
        #expect(pieces.map(\.1) == [256, 256, 256, 232])
        #expect(pieces.allSatisfy { $0.0 == 0xCF })
        #expect(ch.data(1) == text, "\(ch.data(1).count) bytes")
    }

    @Test("No link, registered call: DISC and polls answered DM; unregistered: silence")
    func disconnectedAnswers() {
        var s = AX25LinkStation()
        s.register(Self.b)
        let disc = AX25LinkFrame(destination: Self.b, source: Self.a, commandResponse: .command, pollFinal: true,
                                 kind: .unnumbered(.disc, pid: nil, info: [])).encode()
        let answer = s.received(disc, now: 0)
        let dm = AX25LinkFrame(destination: Self.a, source: Self.b, commandResponse: .response, pollFinal: true,
                               kind: .unnumbered(.dm, pid: nil, info: [])).encode()
        #expect(answer == [.transmit(dm)])
        let poll = AX25LinkFrame(destination: Self.b, source: Self.a, commandResponse: .command, pollFinal: true,
                                 kind: .information(ns: 0, nr: 0, pid: 0xF0, info: [1])).encode()
        #expect(s.received(poll, now: 0) == [.transmit(dm)])
        #expect(s.links.isEmpty)
        s.unregister(Self.b)
        #expect(s.received(disc, now: 0).isEmpty)
        // Through a digipeater: not ours until repeated; the answer goes back through it.
        s.register(Self.b)
        let digi = Fx.call("RELAY")
        var viaRelay = AX25LinkFrame(destination: Self.b, source: Self.a, digipeaters: [digi], commandResponse: .command, pollFinal: true,
                                     kind: .unnumbered(.sabm, pid: nil, info: []))
        #expect(s.received(viaRelay.encode(), now: 0).isEmpty)
        viaRelay.digipeaters[0].highBit = true
        let out = s.received(viaRelay.encode(), now: 0)
        let ua = AX25LinkFrame(destination: Self.a, source: Self.b, digipeaters: [digi], commandResponse: .response, pollFinal: true,
                               kind: .unnumbered(.ua, pid: nil, info: [])).encode()
        #expect(out.first == .transmit(ua))
        #expect(s.link(from: Self.b, to: Self.a)?.path == [digi])
        #expect(s.link(from: Self.b, to: Self.a)?.t1Value == 9)
    }
}
