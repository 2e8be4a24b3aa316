import ModemCrypto
import ModemMessaging
import ModemRuntime

/// Targets for ModemMessaging: what a peer sends over a session, and what is heard while pairing.
enum MessagingFuzzTargets {
    static let all: [FuzzTarget] = [noiseHandshake, sessionRecord, vcard, mailbox, dataConnection, pairing]

    /// A fixed key: fuzzing must be repeatable, so no key here is random.
    static func key(_ seed: UInt8) -> X25519PrivateKey {
        do {
            return try X25519PrivateKey(rawRepresentation: (0..<32).map { UInt8(truncatingIfNeeded: Int($0) &* 29 &+ Int(seed)) })
        } catch {
            preconditionFailure("fixed X25519 key: \(error)")
        }
    }

    static let prologue = Array("fuzz".utf8)

    // MARK: Noise handshake

    /// A handshake between two fixed-key sides (initiator i, responder r), then transport messages.
    static func handshake(_ cipher: NoiseCipher) -> (toResponder: [[UInt8]], toInitiator: [[UInt8]]) {
        var i = HandshakeState(initiator: true, prologue: prologue, staticKey: key(1), ephemeralKey: key(2), cipher: cipher)
        var r = HandshakeState(initiator: false, prologue: prologue, staticKey: key(3), ephemeralKey: key(4), cipher: cipher)
        do {
            let m1 = try i.writeMessage(payload: [1, 2, 3])
            _ = try r.readMessage(m1)
            let m2 = try r.writeMessage(payload: Array("responder".utf8))
            _ = try i.readMessage(m2)
            let m3 = try i.writeMessage(payload: Array("initiator".utf8))
            _ = try r.readMessage(m3)
            var (iSend, _) = try i.split()
            var (rSend, _) = try r.split()
            let t1 = try iSend.encrypt(ad: [], plaintext: Array("to the responder".utf8))
            let t2 = try rSend.encrypt(ad: [], plaintext: Array("to the initiator".utf8))
            return ([m1, m3, t1], [m2, t2])
        } catch {
            preconditionFailure("fixed-key Noise handshake: \(error)")
        }
    }

    /// Byte 0: bit 0 set makes this side the initiator, bit 1 picks AES-GCM over ChaChaPoly. The rest
    /// is the peer's messages (``FuzzChunks``): the handshake messages this side reads, then transport
    /// messages it decrypts. This side writes its own messages in turn, with fixed keys.
    static let noiseHandshake = FuzzTarget(
        name: "noise-handshake",
        summary: "HandshakeState.readMessage (Noise XX) and the transport CipherState.decrypt after split()",
        seeds: {
            var out: [(name: String, bytes: [UInt8])] = []
            for (bit, cipher) in [(UInt8(0), NoiseCipher.chaChaPoly), (2, .aesGCM)] {
                let (toR, toI) = handshake(cipher)
                out.append((name: "responder-\(cipher.rawValue)", bytes: [bit] + FuzzChunks.join(toR)))
                out.append((name: "initiator-\(cipher.rawValue)", bytes: [bit | 1] + FuzzChunks.join(toI)))
            }
            return out
        },
        run: { input in
            guard let mode = input.first else { return }
            let initiator = mode & 1 != 0
            let cipher: NoiseCipher = mode & 2 != 0 ? .aesGCM : .chaChaPoly
            var state = initiator
                ? HandshakeState(initiator: true, prologue: prologue, staticKey: key(1), ephemeralKey: key(2), cipher: cipher)
                : HandshakeState(initiator: false, prologue: prologue, staticKey: key(3), ephemeralKey: key(4), cipher: cipher)
            var messages = FuzzChunks.split(Array(input.dropFirst()))[...]
            do {
                while !state.isComplete {
                    if state.isMyTurn {
                        _ = try state.writeMessage(payload: [0x42])
                    } else {
                        guard let m = messages.popFirst() else { return }
                        let payload = try state.readMessage(m)
                        precondition(payload.count <= HandshakeState.maximumMessageLength, "Noise: an oversized payload")
                    }
                }
                precondition(state.remoteStatic?.count == HandshakeState.keyLength, "Noise: complete without the peer's key")
                var (_, receive) = try state.split()
                for m in messages { _ = try receive.decrypt(ad: [], ciphertext: m) }
            } catch {
                return
            }
        }
    )

    // MARK: Session records

    static func sessionConfiguration(initiator: Bool) -> SessionConfiguration {
        let me = initiator ? key(5) : key(6), peer = initiator ? key(6) : key(5)
        return SessionConfiguration(
            role: initiator ? .initiator : .responder, userName: initiator ? "alice" : "bob", service: .mailbox,
            transportKind: .stream, keepalive: 30, staticKey: me, ephemeralKey: initiator ? key(7) : key(8),
            trusted: [TrustedPeer(name: initiator ? "bob" : "alice", publicKey: Array(peer.publicKey.rawRepresentation))])
    }

    /// Two fixed-key session machines run against each other: handshake, ACCEPT, records both ways,
    /// then a close; the frames each received.
    static func sessionExchange() -> (toResponder: [[UInt8]], toInitiator: [[UInt8]]) {
        var a = SessionStateMachine(configuration: sessionConfiguration(initiator: true))
        var b = SessionStateMachine(configuration: sessionConfiguration(initiator: false))
        var toB: [[UInt8]] = [], toA: [[UInt8]] = []
        _ = a.start(now: 0)
        _ = b.start(now: 0)
        func pump() {
            var moved = true
            while moved {
                moved = false
                while let f = a.nextFrame(now: 1) { moved = true; toB.append(f); _ = b.receive(frame: f, now: 1) }
                while let f = b.nextFrame(now: 1) { moved = true; toA.append(f); _ = a.receive(frame: f, now: 1) }
            }
        }
        pump()
        if let f = try? a.seal(kind: 0x10, body: Array("hello".utf8), now: 2) { toB.append(f); _ = b.receive(frame: f, now: 2) }
        if let f = try? b.seal(kind: 0x12, body: [], now: 2) { toA.append(f); _ = a.receive(frame: f, now: 2) }
        _ = a.tick(now: 40)
        pump()
        _ = a.close(now: 50)
        pump()
        return (toB, toA)
    }

    /// Byte 0: bit 0 set makes this side the initiator (else the responder); bit 1 set means the rest
    /// is the TCP byte stream (the responder expects the `SMsg` preamble, then length-prefixed frames)
    /// read through SessionFrameDecoder in 61-byte pieces; clear, the rest is frames (``FuzzChunks``).
    /// Each frame goes to SessionStateMachine.receive: handshake, TLVs, ACCEPT, sealed records.
    static let sessionRecord = FuzzTarget(
        name: "session-record",
        summary: "SessionFrameDecoder and SessionStateMachine.receive (handshake, ACCEPT, records, counters)",
        seeds: {
            let (toB, toA) = sessionExchange()
            return [
                (name: "responder-frames", bytes: [0] + FuzzChunks.join(toB)),
                (name: "initiator-frames", bytes: [1] + FuzzChunks.join(toA)),
                (name: "responder-stream", bytes: [2] + SessionWire.preamble + toB.flatMap { SessionFrameDecoder.encode($0) }),
                (name: "initiator-stream", bytes: [3] + toA.flatMap { SessionFrameDecoder.encode($0) }),
            ]
        },
        run: { input in
            guard let mode = input.first else { return }
            let initiator = mode & 1 != 0
            var machine = SessionStateMachine(configuration: sessionConfiguration(initiator: initiator))
            _ = machine.start(now: 0)
            var now = 0.0
            func feed(_ frame: [UInt8]) -> Bool {
                now += 0.1
                let actions = machine.receive(frame: frame, now: now)
                while machine.nextFrame(now: now) != nil {}
                return !machine.isFinished && !actions.contains(.closeTransport)
            }
            let rest = Array(input.dropFirst())
            if mode & 2 == 0 {
                for frame in FuzzChunks.split(rest) where !feed(frame) { return }
            } else {
                var decoder = SessionFrameDecoder(expectPreamble: !initiator)
                var i = 0
                while i < rest.count {
                    decoder.append(rest[i..<min(rest.count, i + 61)])
                    i += 61
                    do {
                        while let frame = try decoder.next() {
                            precondition(frame.count <= SessionWire.maximumFrameLength, "session: an oversized frame")
                            guard feed(frame) else { return }
                        }
                    } catch {
                        return
                    }
                }
            }
            _ = machine.tick(now: now + 100)
        }
    )

    // MARK: vCard

    /// A contact card as `modem` makes one.
    static func sampleCard() -> VCard {
        do {
            return try VCard(formattedName: "Alice Example", more: [
                VCard.Property(name: "TEL", parameters: [VCard.Parameter(name: "TYPE", values: ["cell", "voice"])], value: "+1-555-0100"),
                VCard.Property(group: "item1", name: "NOTE", value: VCard.escapeText("line one\nline two; with, escapes\\")),
            ])
        } catch {
            preconditionFailure("sample vCard: \(error)")
        }
    }

    /// The input is a contact card's bytes (the mailbox's CONTACT record); what parses serialises and
    /// parses back to the same card.
    static let vcard = FuzzTarget(
        name: "vcard",
        summary: "VCard.parse (unfolding, groups, parameters, escapes) and the round trip of what parses",
        seeds: {
            [(name: "card", bytes: Array(sampleCard().serialized().utf8)),
             (name: "folded", bytes: Array("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Bob\r\n  Folded\r\nEMAIL;TYPE=work:bob@example.org\r\nEND:VCARD\r\n".utf8))]
        },
        run: { input in
            guard let card = try? VCard.parse(input) else { return }
            let again = try? VCard.parse(card.serialized())
            precondition(again == card, "vCard: a parsed card does not serialise back to itself")
        }
    )

    // MARK: Mailbox

    /// Each message (``FuzzChunks``) is one mailbox record from the peer: byte 0 its kind, the rest its
    /// body; this side has three chunks to send, so HELD records have something to acknowledge.
    static let mailbox = FuzzTarget(
        name: "mailbox",
        summary: "MailboxStateMachine.record (CONTACT with a vCard, CHUNK, HELD)",
        seeds: {
            func chunk(_ seq: UInt32, _ text: String) -> [UInt8] {
                [MailboxRecordKind.chunk, UInt8(seq >> 24), UInt8(seq >> 16 & 0xFF), UInt8(seq >> 8 & 0xFF), UInt8(seq & 0xFF)] + Array(text.utf8)
            }
            let records: [[UInt8]] = [
                [MailboxRecordKind.contact] + Array(sampleCard().serialized().utf8),
                chunk(0, "first"), chunk(1, "second"),
                [MailboxRecordKind.held, 0, 0, 0, 1],
            ]
            return [(name: "session", bytes: FuzzChunks.join(records)),
                    (name: "no-contact", bytes: FuzzChunks.join([[MailboxRecordKind.contact], chunk(0, "x")]))]
        },
        run: { input in
            var machine = MailboxStateMachine(configuration: MailboxConfiguration(maximumBytes: 1 << 20),
                                              peer: PeerIdentity(publicKey: [UInt8](repeating: 2, count: 32), trustedName: "bob", claimedName: "bob"),
                                              maximumRecordBody: SessionWire.maximumRecordBody, now: 0)
            _ = machine.start(now: 0)
            for ticket in 0..<3 { _ = machine.submit([UInt8](repeating: UInt8(ticket), count: 100), ticket: ticket, now: 0) }
            var now = 0.0
            for record in FuzzChunks.split(input) {
                guard let kind = record.first else { continue }
                now += 0.1
                for action in machine.record(kind: kind, body: Array(record.dropFirst()), now: now) {
                    if case .deliver(let seq, _) = action { _ = machine.delivered(seq: seq, now: now) }
                }
            }
            _ = machine.tick(now: now + 4000)
        }
    )

    // MARK: Data connections

    /// Two connection machines run against each other: an offer, its acceptance, a stream channel; the
    /// records the accepting side received, as (kind, body).
    static func dataExchange() -> [[UInt8]] {
        var a = ConnectionStateMachine(), b = ConnectionStateMachine()
        var toB: [[UInt8]] = []
        var toA: [DataAction] = []
        func deliver(_ actions: [DataAction]) {
            for case .send(let kind, let body) in actions {
                toB.append([kind] + body)
                toA += b.input(kind: kind, body: body)
            }
        }
        guard let (id, offer) = try? a.offer(metadata: Array("photo.jpg".utf8)) else { return toB }
        deliver(offer)
        for case .event(.offered(let theirs, _)) in toA { toA = (try? b.accept(theirs)) ?? [] }
        for case .send(let kind, let body) in toA { _ = a.input(kind: kind, body: body) }
        if let (ch, open) = try? a.openChannel(id, kind: .stream, description: "chat") {
            deliver(open)
            deliver(a.closeChannel(id, ch))
        }
        deliver(a.end(id))
        return toB
    }

    /// Byte 0: bit 0 set makes this side offer a connection first. Then each message (``FuzzChunks``) is
    /// one data-connection record: byte 0 its kind, the rest its body; offers are accepted.
    static let dataConnection = FuzzTarget(
        name: "data-connection",
        summary: "DataMessage.decode (and its round trip) and ConnectionStateMachine.input",
        seeds: {
            let made = dataExchange()
            let manual: [DataMessage] = [
                .offer(conn: 1, metadata: [1, 2, 3]),
                .channelOpen(conn: 1, channel: 1, kind: .file, size: 10, blockSize: 4096, fileKey: [7, 7],
                             description: "a file", name: "notes.txt"),
                // A size that overflowed the receiver's block count (issue 32).
                .channelOpen(conn: 1, channel: 2, kind: .file, size: UInt64.max, blockSize: 16 << 20, fileKey: [7],
                             description: "huge", name: "huge.bin"),
                .data(conn: 1, channel: 1, block: 0, offset: 0, last: true, hash: [UInt8](repeating: 0xAB, count: 32),
                      bytes: Array("0123456789".utf8)[...]),
                .channelHave(conn: 1, channel: 1, blocks: 1, aggregate: [], bitmap: [1]),
                .channelDone(conn: 1, channel: 1, root: [UInt8](repeating: 1, count: 32)),
                .channelResult(conn: 1, channel: 1, ok: false, reason: .protocolError, badBlocks: [0]),
                .progress(conn: 1, channel: 1, bytes: 10),
                .answer(conn: 0x8000_0001, accept: true, reason: .none),
            ]
            return [(name: "exchange", bytes: [0] + FuzzChunks.join(made)),
                    (name: "messages", bytes: [1] + FuzzChunks.join(manual.map { let e = $0.encoded(); return [e.kind] + e.body }))]
        },
        run: { input in
            guard let mode = input.first else { return }
            var machine = ConnectionStateMachine()
            if mode & 1 != 0 { _ = try? machine.offer(metadata: [1]) }
            for record in FuzzChunks.split(Array(input.dropFirst())) {
                guard let kind = record.first else { continue }
                let body = Array(record.dropFirst())
                if let message = DataMessage.decode(kind: kind, body: body) {
                    let e = message.encoded()
                    precondition(DataMessage.decode(kind: e.kind, body: e.body) == message, "data message: does not encode back to itself")
                }
                for action in machine.input(kind: kind, body: body) {
                    switch action {
                    case .event(.offered(let id, _)):
                        _ = try? machine.accept(id)
                    case .channel(.opened(_, _, .file, let size, let blockSize, _, _, _)):
                        // A peer's file offer: the receiver's own bounds on its numbers (any value answers).
                        if let blocks = DataConnections.incomingFileBlocks(size: size, blockSize: blockSize, maximumBlocks: 8 * 65_000) {
                            let b = UInt64(blockSize)
                            precondition(UInt64(blocks) * b >= size && (blocks == 0 || UInt64(blocks - 1) * b < size),
                                         "data connection: a file's block count does not cover its size")
                        }
                    default:
                        break
                    }
                }
            }
            _ = machine.sessionEnded()
        }
    )

    // MARK: Pairing

    static let pairingTiming = PairingTiming(resendSeconds: 1, collectSeconds: 2, holdSeconds: 1, abortLingerSeconds: 1)

    static func pairingMachine(_ role: PairingRole) -> PairingStateMachine {
        var random = SplitMix64(seed: role == .announcer ? 1 : 2)   // fixed: pairing machines are repeatable
        return PairingStateMachine(role: role, privateKey: key(role == .announcer ? 9 : 10), name: role == .announcer ? "alice" : "bob",
                                   seconds: 60, timing: pairingTiming, random: &random)
    }

    /// An announcer and a listener run against each other: the frames each heard.
    static func pairingExchange() -> (toAnnouncer: [[UInt8]], toListener: [[UInt8]]) {
        var a = pairingMachine(.announcer), l = pairingMachine(.listener)
        var toA: [[UInt8]] = [], toL: [[UInt8]] = []
        var fromA = a.start(now: 0), fromL = l.start(now: 0)
        var now = 0.0
        for _ in 0..<40 where !(a.isFinished && l.isFinished) {
            now += 0.5
            var nextA: [PairingAction] = [], nextL: [PairingAction] = []
            for case .play(let f) in fromA { toL.append(f); nextL += l.frameHeard(f, now: now); nextA += a.transmitted(now: now) }
            for case .play(let f) in fromL { toA.append(f); nextA += a.frameHeard(f, now: now); nextL += l.transmitted(now: now) }
            nextA += a.tick(now: now)
            nextL += l.tick(now: now)
            fromA = nextA
            fromL = nextL
        }
        return (toA, toL)
    }

    /// Byte 0: bit 0 set makes this side the listener (else the announcer). Each message
    /// (``FuzzChunks``) is one frame heard: PairingToken and PairingMessage decoding, then the machine.
    static let pairing = FuzzTarget(
        name: "pairing",
        summary: "PairingToken(decoding:), PairingMessage(decoding:) and PairingStateMachine.frameHeard",
        seeds: {
            let (toA, toL) = pairingExchange()
            return [(name: "announcer", bytes: [0] + FuzzChunks.join(toA)),
                    (name: "listener", bytes: [1] + FuzzChunks.join(toL)),
                    (name: "token", bytes: [1] + FuzzChunks.join([PairingToken(session: 0x1234, commitment: [UInt8](repeating: 0xC3, count: 8)).encode()]))]
        },
        run: { input in
            guard let mode = input.first else { return }
            var machine = pairingMachine(mode & 1 != 0 ? .listener : .announcer)
            _ = machine.start(now: 0)
            var now = 0.0
            for frame in FuzzChunks.split(Array(input.dropFirst())) {
                now += 0.3
                if let token = try? PairingToken(decoding: frame) {
                    precondition((try? PairingToken(decoding: token.encode())) == token, "pairing token: does not encode back to itself")
                }
                if let message = try? PairingMessage(decoding: frame) {
                    precondition((try? PairingMessage(decoding: message.encode())) == message, "pairing message: does not encode back to itself")
                }
                _ = machine.frameHeard(frame, now: now)
                _ = machine.tick(now: now)
            }
            _ = machine.tick(now: now + 100)
        }
    )
}
