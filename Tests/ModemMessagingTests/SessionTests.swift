import ModemCrypto
import Foundation
import ModemMessaging
import ModemTransport
import Testing

/// Two session machines wired together with no I/O: frames move only when ``pump()`` runs, the
/// clock only when a test moves it.
struct MachinePair {
    var a: SessionStateMachine
    var b: SessionStateMachine
    var now = 0.0
    var actionsA: [SessionAction] = []
    var actionsB: [SessionAction] = []
    /// Frames from a to b that the line dropped (a cut), or nil when it carries them.
    var cutAtoB = false
    var cutBtoA = false
    var framesAtoB: [[UInt8]] = []
    var framesBtoA: [[UInt8]] = []

    static let keyA = X25519PrivateKey()
    static let keyB = X25519PrivateKey()
    static var publicA: [UInt8] { Array(keyA.publicKey.rawRepresentation) }
    static var publicB: [UInt8] { Array(keyB.publicKey.rawRepresentation) }

    init(trustAtA: [TrustedPeer]? = nil, trustAtB: [TrustedPeer]? = nil, serviceB: SessionService = .mailbox,
         kind: TransportKind = .stream, keepalive: Double = 10, keepaliveB: Double? = nil, limitsA: SessionLimits = .none,
         handshakeTimeout: Double = 30, userNames: (String, String) = ("alice", "bob")) {
        let trustA = trustAtA ?? [TrustedPeer(name: "bob", publicKey: Self.publicB)]
        let trustB = trustAtB ?? [TrustedPeer(name: "alice", publicKey: Self.publicA)]
        a = SessionStateMachine(configuration: SessionConfiguration(
            role: .initiator, userName: userNames.0, service: .mailbox, transportKind: kind, keepalive: keepalive, limits: limitsA,
            handshakeTimeout: handshakeTimeout, staticKey: Self.keyA, trusted: trustA))
        b = SessionStateMachine(configuration: SessionConfiguration(
            role: .responder, userName: userNames.1, service: serviceB, transportKind: kind, keepalive: keepaliveB ?? keepalive,
            handshakeTimeout: handshakeTimeout, staticKey: Self.keyB, trusted: trustB))
    }

    mutating func start() {
        actionsA += a.start(now: now)
        actionsB += b.start(now: now)
        pump()
    }

    /// Moves frames both ways until neither side has anything to send.
    mutating func pump() {
        var moved = true
        while moved {
            moved = false
            while let frame = a.nextFrame(now: now) {
                moved = true
                framesAtoB.append(frame)
                if !cutAtoB { actionsB += b.receive(frame: frame, now: now) }
            }
            while let frame = b.nextFrame(now: now) {
                moved = true
                framesBtoA.append(frame)
                if !cutBtoA { actionsA += a.receive(frame: frame, now: now) }
            }
        }
    }

    mutating func send(fromA: Bool, kind: UInt8 = 0x10, _ body: [UInt8]) throws {
        if fromA {
            let frame = try a.seal(kind: kind, body: body, now: now)
            framesAtoB.append(frame)
            if !cutAtoB { actionsB += b.receive(frame: frame, now: now) }
        } else {
            let frame = try b.seal(kind: kind, body: body, now: now)
            framesBtoA.append(frame)
            if !cutBtoA { actionsA += a.receive(frame: frame, now: now) }
        }
        pump()
    }

    /// Advances the clock in steps, ticking both machines and pumping.
    mutating func advance(to time: Double, step: Double = 0.25) {
        while now < time {
            now = min(time, now + step)
            actionsA += a.tick(now: now)
            actionsB += b.tick(now: now)
            pump()
        }
    }

    static func delivered(_ actions: [SessionAction]) -> [[UInt8]] {
        actions.compactMap { if case .deliver(_, let body) = $0 { body } else { nil } }
    }
    static func failure(_ actions: [SessionAction]) -> SessionFailure? {
        actions.lazy.compactMap { if case .failed(let f) = $0 { f } else { nil } }.first
    }
    static func end(_ actions: [SessionAction]) -> SessionEnd? {
        actions.lazy.compactMap { if case .ended(let e) = $0 { e } else { nil } }.first
    }
    static func established(_ actions: [SessionAction]) -> PeerIdentity? {
        actions.lazy.compactMap { if case .established(let p) = $0 { p } else { nil } }.first
    }
}

@Suite("Session state machine")
struct SessionTests {
    @Test("sealing into a reused buffer gives the same frames as sealing afresh, whatever the buffer held")
    func sealIntoReusedBuffer() throws {
        var p = MachinePair()
        p.start()
        var twin = p.a  // the same keys and counters (a value)
        var buffer = [UInt8](repeating: 0xEE, count: 70_000)
        for body in [[UInt8](repeating: 7, count: 64_000), [1, 2, 3], [], [UInt8](repeating: 9, count: 65_000)] {
            let fresh = try p.a.seal(kind: 0x10, body: body, now: 0)
            try twin.seal(kind: 0x10, body: body, now: 0, into: &buffer)
            #expect(buffer == fresh)
            let actions = p.b.receive(frame: buffer, now: 0)
            #expect(MachinePair.delivered(actions) == [body])
        }
    }

    @Test("handshake with both keys trusted: both established, names and keys bound, records flow both ways")
    func establishAndExchange() throws {
        var p = MachinePair()
        p.start()
        #expect(MachinePair.established(p.actionsA) == PeerIdentity(publicKey: MachinePair.publicB, trustedName: "bob", claimedName: "bob"))
        #expect(MachinePair.established(p.actionsB) == PeerIdentity(publicKey: MachinePair.publicA, trustedName: "alice", claimedName: "alice"))
        #expect(p.framesAtoB.first?.first == 0x51 && p.framesBtoA.first?.first == 0x52)
        for i in 0..<50 {
            try p.send(fromA: true, [UInt8(i), 1])
            try p.send(fromA: false, kind: 0x20, [UInt8(i), 2])
        }
        #expect(MachinePair.delivered(p.actionsB) == (0..<50).map { [UInt8($0), 1] })
        #expect(MachinePair.delivered(p.actionsA) == (0..<50).map { [UInt8($0), 2] })
        #expect(p.a.applicationRecordsSent == 50 && p.b.applicationRecordsReceived == 50)
        // The plaintext never appears on the line.
        let big = [UInt8](repeating: 0xAB, count: 1000)
        try p.send(fromA: true, big)
        #expect(p.framesAtoB.last!.count == 1000 + 26)
        #expect(p.framesAtoB.last!.filter { $0 == 0xAB }.count < 50)
        #expect(throws: SessionSendError.self) { try p.a.seal(kind: 0x03, body: [], now: 0) }
        #expect(throws: SessionSendError.self) { try p.a.seal(kind: 0x10, body: [UInt8](repeating: 0, count: p.a.maximumRecordBody + 1), now: 0) }
        #expect(p.a.maximumRecordBody == 65_518)
    }

    @Test("the initiator does not trust the responder: NOPE, both fail with FAIL_INVALID_AUTHORIZATION, no record leaves either")
    func initiatorRefuses() {
        var p = MachinePair(trustAtA: [])
        p.start()
        #expect(MachinePair.failure(p.actionsA)?.seedName == "FAIL_INVALID_AUTHORIZATION")
        #expect(MachinePair.failure(p.actionsB)?.seedName == "FAIL_INVALID_AUTHORIZATION")
        #expect(MachinePair.established(p.actionsA) == nil && MachinePair.established(p.actionsB) == nil)
        #expect(!p.framesAtoB.contains { $0.first == 0x54 } && !p.framesBtoA.contains { $0.first == 0x54 })
        #expect(p.framesAtoB.last?.first == 0x55)
        #expect(throws: SessionSendError.self) { try p.a.seal(kind: 0x10, body: [1], now: 0) }
        #expect(throws: SessionSendError.self) { try p.b.seal(kind: 0x10, body: [1], now: 0) }
        #expect(p.a.applicationRecordsSent == 0 && p.b.applicationRecordsSent == 0)
        if case .invalidAuthorization(let text)? = MachinePair.failure(p.actionsA) { #expect(text.contains(KeyText.encode(MachinePair.publicB))) }
    }

    @Test("the responder does not trust the initiator: REJECT, both fail with FAIL_INVALID_AUTHORIZATION, zero module records")
    func responderRefuses() {
        var p = MachinePair(trustAtB: [TrustedPeer(name: "other", publicKey: Array(X25519PrivateKey().publicKey.rawRepresentation))])
        p.start()
        #expect(MachinePair.failure(p.actionsA) == .invalidAuthorization("the peer does not trust this installation's key (your key is not trusted here)"))
        #expect(MachinePair.failure(p.actionsB)?.seedName == "FAIL_INVALID_AUTHORIZATION")
        #expect(MachinePair.established(p.actionsA) == nil && MachinePair.established(p.actionsB) == nil)
        // The only records: the initiator's ACCEPT and the responder's REJECT.
        #expect(p.framesBtoA.filter { $0.first == 0x54 }.count == 1)
        #expect(p.framesAtoB.filter { $0.first == 0x54 }.count == 1)
        #expect(p.a.applicationRecordsSent == 0 && p.b.applicationRecordsSent == 0)
        #expect(p.a.applicationRecordsReceived == 0 && p.b.applicationRecordsReceived == 0)
    }

    @Test("expired trust gives FAIL_EXPIRED_KEY on both sides")
    func expiredTrust() {
        let past = Date(timeIntervalSinceNow: -60)
        var p = MachinePair(trustAtB: [TrustedPeer(name: "alice", publicKey: MachinePair.publicA, expires: past)])
        p.start()
        #expect(MachinePair.failure(p.actionsB)?.seedName == "FAIL_EXPIRED_KEY")
        #expect(MachinePair.failure(p.actionsA)?.seedName == "FAIL_EXPIRED_KEY")
        var q = MachinePair(trustAtA: [TrustedPeer(name: "bob", publicKey: MachinePair.publicB, expires: Date(timeIntervalSinceNow: 3600))])
        q.start()
        #expect(MachinePair.established(q.actionsA) != nil)
    }

    @Test("another service in the prologue fails the handshake on both sides")
    func prologueMismatch() {
        var p = MachinePair(serviceB: .data)
        p.start()
        #expect(MachinePair.failure(p.actionsA)?.seedName == "FAIL_NETWORK_UNAVAILABLE")
        #expect(MachinePair.failure(p.actionsB)?.seedName == "FAIL_NETWORK_UNAVAILABLE")
    }

    @Test("a replayed record is dropped and counted; a changed byte ends the session with END_LOST_NET")
    func replayAndTamper() throws {
        var p = MachinePair()
        p.start()
        try p.send(fromA: true, [1, 2, 3])
        let frame = p.framesAtoB.last!
        p.actionsB += p.b.receive(frame: frame, now: p.now)
        #expect(p.b.replaysDropped == 1)
        #expect(MachinePair.delivered(p.actionsB) == [[1, 2, 3]])
        try p.send(fromA: true, [4])
        #expect(MachinePair.delivered(p.actionsB) == [[1, 2, 3], [4]])
        // A record with a changed ciphertext byte.
        var tampered = try p.a.seal(kind: 0x10, body: [9, 9, 9], now: p.now)
        tampered[12] ^= 0x40
        p.actionsB += p.b.receive(frame: tampered, now: p.now)
        #expect(MachinePair.end(p.actionsB)?.seedName == "END_LOST_NET")
        #expect(p.actionsB.last == .closeTransport)
        #expect(MachinePair.delivered(p.actionsB).count == 2)
    }

    @Test("a skipped counter ends a stream session; on a link gaps are allowed and replays still dropped")
    func counterGaps() throws {
        var p = MachinePair()
        p.start()
        _ = try p.a.seal(kind: 0x10, body: [1], now: 0)  // lost
        try p.send(fromA: true, [2])
        #expect(MachinePair.end(p.actionsB)?.seedName == "END_LOST_NET")

        var q = MachinePair(kind: .link)
        q.start()
        _ = try q.a.seal(kind: 0x10, body: [1], now: 0)  // lost on the link
        try q.send(fromA: true, [2])
        let second = q.framesAtoB.last!
        try q.send(fromA: true, [3])
        q.actionsB += q.b.receive(frame: second, now: q.now)
        #expect(MachinePair.delivered(q.actionsB) == [[2], [3]])
        #expect(q.b.replaysDropped == 1)
        #expect(MachinePair.end(q.actionsB) == nil)
    }

    @Test("keepalive: PINGs keep an idle session alive; a cut line is END_LOST_NET after twice the keepalive")
    func keepalive() throws {
        var p = MachinePair(keepalive: 2)
        p.start()
        p.advance(to: 30)
        #expect(MachinePair.end(p.actionsA) == nil && MachinePair.end(p.actionsB) == nil)
        let pings = p.framesAtoB.count + p.framesBtoA.count
        #expect(pings >= 20)  // about one frame per interval each way
        p.cutAtoB = true
        p.cutBtoA = true
        p.advance(to: 33.5)
        #expect(MachinePair.end(p.actionsA) == nil)
        p.advance(to: 34.5)
        #expect(MachinePair.end(p.actionsA)?.seedName == "END_LOST_NET")
        #expect(MachinePair.end(p.actionsB)?.seedName == "END_LOST_NET")
    }

    @Test("on a link the transport's signs of life keep the session: no PING goes out, and without them it is END_LOST_NET")
    func keepaliveOnALink() {
        var p = MachinePair(kind: .link, keepalive: 2)
        p.start()
        let framesAtStart = p.framesAtoB.count + p.framesBtoA.count
        for t in stride(from: 0.5, through: 30, by: 0.5) {
            p.a.peerHeard(now: t)
            p.b.peerHeard(now: t)
            p.advance(to: t)
        }
        #expect(MachinePair.end(p.actionsA) == nil && MachinePair.end(p.actionsB) == nil)
        #expect(p.framesAtoB.count + p.framesBtoA.count == framesAtStart)  // no PING, no PONG
        p.advance(to: 33.5)
        #expect(MachinePair.end(p.actionsA) == nil)
        p.advance(to: 34.5)
        #expect(MachinePair.end(p.actionsA)?.seedName == "END_LOST_NET")
        #expect(MachinePair.end(p.actionsB)?.seedName == "END_LOST_NET")
    }

    @Test("keepalive uses the smaller of the two intervals; peerHeard counts as life")
    func keepaliveNegotiation() {
        var p = MachinePair(keepalive: 10, keepaliveB: 3)
        p.start()
        #expect(p.a.keepalive == 3 && p.b.keepalive == 3)
        p.cutBtoA = true
        for t in stride(from: 0.5, through: 20, by: 0.5) {
            p.a.peerHeard(now: t)
            p.advance(to: t)
        }
        #expect(MachinePair.end(p.actionsA) == nil)
    }

    @Test("close: CLOSE, the peer's last records, CLOSED; END_USER_QUIT here, END_OTHER_USER_QUIT there")
    func halfClose() throws {
        var p = MachinePair()
        p.start()
        p.actionsA += p.a.close(now: p.now)
        p.pump()
        #expect(p.actionsB.contains(.peerClosing))
        #expect(throws: SessionSendError.closing) { try p.a.seal(kind: 0x10, body: [1], now: 0) }
        try p.send(fromA: false, [7, 7])  // the peer still sends what is due
        p.actionsB += p.b.close(now: p.now)
        p.pump()
        #expect(MachinePair.delivered(p.actionsA) == [[7, 7]])
        #expect(MachinePair.end(p.actionsA) == .userQuit(nil))
        #expect(MachinePair.end(p.actionsB) == .otherUserQuit)
        #expect(p.actionsA.last == .closeTransport && p.actionsB.last == .closeTransport)
    }

    @Test("both close at once: each reports END_USER_QUIT")
    func simultaneousClose() {
        var p = MachinePair()
        p.start()
        p.actionsA += p.a.close(now: p.now)
        p.actionsB += p.b.close(now: p.now)
        p.pump()
        #expect(MachinePair.end(p.actionsA) == .userQuit(nil))
        #expect(MachinePair.end(p.actionsB) == .userQuit(nil))
    }

    @Test("the line ends without CLOSE: END_OTHER_USER_LOST; after the peer's CLOSE it is END_OTHER_USER_QUIT")
    func transportEnds() {
        var p = MachinePair()
        p.start()
        #expect(MachinePair.end(p.a.transportEnded(.peerClosed, now: 1)) == .otherUserLost("the peer's connection ended without CLOSE"))
        #expect(MachinePair.end(p.b.transportEnded(.localFailure("boom"), now: 1)) == .lostNet("boom"))

        var q = MachinePair()
        q.start()
        q.actionsA += q.a.close(now: q.now)
        q.pump()
        #expect(MachinePair.end(q.b.transportEnded(.reset, now: 1)) == .otherUserQuit)

        var r = MachinePair()
        r.actionsA += r.a.start(now: 0)
        #expect(MachinePair.failure(r.a.transportEnded(.peerClosed, now: 1))?.seedName == "FAIL_NETWORK_UNAVAILABLE")
    }

    @Test("limits: the byte limit and the time limit close the session with END_USER_QUIT and the detail")
    func limits() throws {
        var p = MachinePair(limitsA: SessionLimits(bytes: 100))
        p.start()
        try p.send(fromA: true, [UInt8](repeating: 1, count: 60))
        try p.send(fromA: false, [UInt8](repeating: 2, count: 50))  // 110 >= 100: A closes
        #expect(p.actionsB.contains(.peerClosing))
        p.actionsB += p.b.close(now: p.now)
        p.pump()
        guard case .userQuit(let detail)? = MachinePair.end(p.actionsA) else { Issue.record("no END_USER_QUIT"); return }
        #expect(detail?.contains("byte limit") == true)
        #expect(MachinePair.end(p.actionsB) == .otherUserQuit)

        var q = MachinePair(limitsA: SessionLimits(seconds: 5))
        q.start()
        q.advance(to: 6)
        #expect(q.actionsB.contains(.peerClosing))
        q.actionsB += q.b.close(now: q.now)
        q.pump()
        guard case .userQuit(let timeDetail)? = MachinePair.end(q.actionsA) else { Issue.record("no END_USER_QUIT"); return }
        #expect(timeDetail?.contains("time limit") == true)
    }

    @Test("no answer to the handshake: FAIL_NETWORK_UNAVAILABLE at the timeout; cancel before connecting: FAIL_USER_CANCELED")
    func handshakeTimeoutAndCancel() {
        var p = MachinePair(handshakeTimeout: 5)
        p.cutAtoB = true
        p.start()
        p.advance(to: 4.5)
        #expect(MachinePair.failure(p.actionsA) == nil)
        p.advance(to: 5.5)
        #expect(MachinePair.failure(p.actionsA)?.seedName == "FAIL_NETWORK_UNAVAILABLE")

        var q = MachinePair()
        q.actionsA += q.a.start(now: 0)
        #expect(MachinePair.failure(q.a.close(now: 0)) == .userCanceled)
    }

    @Test("garbage frames before keys fail the handshake; after, they end the session; nothing crashes")
    func garbage() {
        var seed: UInt64 = 0x1234
        func next() -> UInt8 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: seed >> 33)
        }
        for trial in 0..<200 {
            var p = MachinePair()
            if trial % 2 == 1 { p.start() } else { p.actionsB += p.b.start(now: 0) }
            let length = Int(next()) % 120
            var frame = (0..<length).map { _ in next() }
            if trial % 3 == 0, !frame.isEmpty { frame[0] = 0x50 | (next() % 6) }
            let actions = p.b.receive(frame: frame, now: 1)
            #expect(MachinePair.delivered(actions).isEmpty)
        }
    }
}
