import ModemBluetooth

/// Targets for ModemBluetooth: each layer of the host stack fed what a controller or a peer sends.
enum BluetoothFuzzTargets {
    static let all: [FuzzTarget] = [h4HCI, l2cap, sdpServer, sdpClient, rfcomm]

    static let sdpRecords = [ServiceRecord.serialPort(channel: 1, name: "SwiftModem")]

    // MARK: H4 and HCI

    /// Answers the controller would give to a command: success, with return parameters that every
    /// init command of ours can read (an address, buffer sizes, a version).
    static func answer(_ opcode: UInt16) -> HCIPacket {
        HCIEvent.commandComplete(numCommands: 1, opcode: opcode,
                                 returnParameters: [0x00, 0xFD, 0x03, 0x40, 0x08, 0x00, 0x01, 0x00, 0x0A, 0x00, 0x01, 0x02, 0x03]).packet
    }

    /// The H4 bytes a controller sends through our init script, then a connection with L2CAP data.
    static func controllerSeed() -> [UInt8] {
        var machine = HCIMachine()
        var stream: [UInt8] = []
        var pending = machine.start(now: 0)
        var rounds = 0
        while rounds < 64 {
            rounds += 1
            let commands = pending.compactMap { output -> UInt16? in
                if case .send(.command(let opcode, _)) = output { return opcode }
                return nil
            }
            guard let opcode = commands.first else { break }
            let event = answer(opcode)
            stream += event.h4
            pending = machine.received(event, now: Double(rounds) * 0.01)
        }
        let peer = BDAddress([0x11, 0x22, 0x33, 0x44, 0x55, 0x66])
        stream += HCIEvent.connectionRequest(address: peer, classOfDevice: 0x5A020C, linkType: 1).packet.h4
        stream += HCIEvent.connectionComplete(status: 0, handle: 0x0040, address: peer, linkType: 1, encryption: 0).packet.h4
        let l2cap: [UInt8] = [0x0C, 0x00, 0x01, 0x00, 0x02, 0x01, 0x04, 0x00, 0x03, 0x00, 0x40, 0x00]
        stream += HCIPacket.acl(handle: 0x0040, boundary: 0b10, broadcast: 0, data: Array(l2cap[0..<5])).h4
        stream += HCIPacket.acl(handle: 0x0040, boundary: 0b01, broadcast: 0, data: Array(l2cap[5...])).h4
        stream += HCIEvent.numberOfCompletedPackets([HCICompletedPackets(handle: 0x0040, count: 1)]).packet.h4
        stream += HCIEvent.remoteNameRequestComplete(status: 0, address: peer, name: "phone").packet.h4
        stream += HCIEvent.extendedInquiryResult(HCIInquiryResponse(address: peer, eir: [6, 0x09] + Array("phone".utf8))).packet.h4
        stream += HCIEvent.disconnectionComplete(status: 0, handle: 0x0040, reason: 0x13).packet.h4
        return stream
    }

    /// Byte 0 picks the piece size; the rest is the byte stream from a controller (H4 over a serial
    /// port or TCP): the H4 decoder, event decoding, and the HCI machine (init script, credits, ACL
    /// reassembly), as HostStack drives them.
    static let h4HCI = FuzzTarget(
        name: "h4-hci",
        summary: "H4Decoder, HCIEvent(packet) and HCIMachine.received: a controller's byte stream",
        seeds: { [(name: "controller", bytes: [40] + controllerSeed())] },
        run: { input in
            guard let first = input.first else { return }
            let piece = Int(first) + 1
            var decoder = H4Decoder()
            var machine = HCIMachine()
            _ = machine.start(now: 0)
            var now = 0.0
            var rest = input.dropFirst()
            while !rest.isEmpty {
                let packets: [HCIPacket]
                do {
                    packets = try decoder.push(Array(rest.prefix(piece)))
                } catch {
                    return   // the framing is lost: the transport gives up
                }
                precondition(decoder.bufferedByteCount <= 5 + 65535, "H4: the decoder holds \(decoder.bufferedByteCount) bytes")
                for packet in packets {
                    now += 0.001
                    if let event = try? HCIEvent(packet) { _ = event.packet }
                    for output in machine.received(packet, now: now) {
                        switch output {
                        case .event(.connectionComplete(status: 0, let handle, _, _, _)): machine.linkOpened(handle: handle)
                        case .event(.disconnectionComplete(status: 0, let handle, _)): _ = machine.linkClosed(handle: handle)
                        case .acl(let handle, let pdu):
                            precondition(pdu.count <= 65535 + 4, "HCI: a reassembled L2CAP frame of \(pdu.count) bytes")
                            _ = machine.sendACL(handle: handle, pdu: Array(pdu.prefix(64)))
                        default: break
                        }
                    }
                }
                rest = rest.dropFirst(piece)
            }
            _ = machine.tick(now: now + 10)
        }
    )

    // MARK: L2CAP

    /// Two links run against each other: the frames each received.
    static func l2capExchange() -> (listener: [[UInt8]], initiator: [[UInt8]]) {
        var a = L2CAPLink(), b = L2CAPLink()
        b.listen(psm: L2CAP.psmSDP)
        b.listen(psm: L2CAP.psmRFCOMM)
        var toB: [[UInt8]] = [], toA: [[UInt8]] = []
        var queueA = a.connect(psm: L2CAP.psmRFCOMM, now: 0).actions
        queueA += a.echo([1, 2, 3], now: 0)
        queueA += a.requestInformation(type: 2, now: 0)
        var queueB: [L2CAPAction] = []
        var cid: UInt16?
        for _ in 0..<16 {
            for case .transmit(let f) in queueA { toB.append(f); queueB += b.received(f, now: 0.1) }
            queueA = []
            for case .transmit(let f) in queueB { toA.append(f); queueA += a.received(f, now: 0.1) }
            for case .opened(let c, _, _, true) in queueB { cid = c }
            queueB = []
            if queueA.isEmpty { break }
        }
        if let cid { for case .transmit(let f) in b.send(cid: cid, [9, 8, 7]) { toA.append(f) } }
        for case .transmit(let f) in a.disconnect(cid: 0x0040, now: 1) { toB.append(f) }
        return (toB, toA)
    }

    /// Byte 0: bit 0 set makes this side connect to PSM 3 first (the initiator's paths). The rest is
    /// L2CAP frames from the peer (``FuzzChunks``), as the HCI layer reassembles them.
    static let l2cap = FuzzTarget(
        name: "l2cap",
        summary: "L2CAPLink.received: signalling (connect, configure, disconnect, echo, information) and data",
        seeds: {
            let (listener, initiator) = l2capExchange()
            return [(name: "listener", bytes: [0] + FuzzChunks.join(listener)),
                    (name: "initiator", bytes: [1] + FuzzChunks.join(initiator))]
        },
        run: { input in
            guard let mode = input.first else { return }
            var link = L2CAPLink()
            link.listen(psm: L2CAP.psmSDP)
            link.listen(psm: L2CAP.psmRFCOMM)
            if mode & 1 != 0 { _ = link.connect(psm: L2CAP.psmRFCOMM, now: 0) }
            var now = 0.0
            for frame in FuzzChunks.split(Array(input.dropFirst())) {
                now += 0.5
                for case .opened(let cid, _, _, _) in link.received(frame, now: now) {
                    _ = link.send(cid: cid, [0x55])
                }
            }
            _ = link.tick(now: now + 11)
            _ = link.tick(now: now + 200)
            _ = link.linkLost()
        }
    )

    // MARK: SDP

    /// A client and our server run against each other: the requests and the responses.
    static func sdpExchange(maximumByteCount: UInt16) -> (requests: [[UInt8]], responses: [[UInt8]]) {
        let server = SDPServer(records: sdpRecords)
        var client = SDPClient(maximumByteCount: maximumByteCount)
        var requests: [[UInt8]] = [], responses: [[UInt8]] = []
        var request = client.start()
        for _ in 0..<64 {
            requests.append(request)
            let response = server.respond(to: request)
            responses.append(response)
            guard case .send(let next) = client.received(response) else { break }
            request = next
        }
        return (requests, responses)
    }

    /// Each message (``FuzzChunks``) is one request PDU from a peer to our SDP server; what the server
    /// answers must itself decode.
    static let sdpServer = FuzzTarget(
        name: "sdp-server",
        summary: "SDPServer.respond(to:) (SDPPDU and DataElement decoding, continuation state)",
        seeds: {
            [(name: "whole", bytes: FuzzChunks.join(sdpExchange(maximumByteCount: 0xFFFF).requests)),
             (name: "continued", bytes: FuzzChunks.join(sdpExchange(maximumByteCount: 7).requests))]
        },
        run: { input in
            let server = SDPServer(records: sdpRecords)
            for request in FuzzChunks.split(input) {
                _ = try? DataElement(decoding: request)
                let response = server.respond(to: request)
                precondition((try? SDPPDU(decoding: response)) != nil, "SDP: the server's answer does not decode")
            }
        }
    )

    /// Byte 0 picks the client's maximum byte count; then each message is one response PDU from a
    /// peer's SDP server, fed to our client until it stops asking.
    static let sdpClient = FuzzTarget(
        name: "sdp-client",
        summary: "SDPClient.received (responses, continuations, attribute lists, ServiceRecord)",
        seeds: {
            [(name: "whole", bytes: [0xFF] + FuzzChunks.join(sdpExchange(maximumByteCount: 0xFFFF).responses)),
             (name: "continued", bytes: [0] + FuzzChunks.join(sdpExchange(maximumByteCount: 7).responses))]
        },
        run: { input in
            guard let first = input.first else { return }
            var client = SDPClient(maximumByteCount: first == 0xFF ? 0xFFFF : UInt16(first))
            _ = client.start()
            for response in FuzzChunks.split(Array(input.dropFirst()), limit: SDPClient.maximumRounds + 8) {
                guard case .send = client.received(response) else { break }
            }
        }
    )

    // MARK: RFCOMM

    /// Two sessions run against each other (one opens server channel 1 and sends data): the frames each
    /// received.
    static func rfcommExchange() -> (responder: [[UInt8]], initiator: [[UInt8]]) {
        var a = RFCOMMSession(initiator: true, peerMTU: 672, localMTU: 672)
        var b = RFCOMMSession(initiator: false, peerMTU: 672, localMTU: 672)
        b.listen(channel: 1)
        var toB: [[UInt8]] = [], toA: [[UInt8]] = []
        var queueA = a.open(channel: 1, now: 0)
        var queueB: [RFCOMMAction] = []
        var sent = false
        for round in 0..<32 {
            let now = Double(round) * 0.01
            for case .transmit(let f) in queueA { toB.append(f); queueB += b.received(f, now: now) }
            queueA = []
            for case .transmit(let f) in queueB { toA.append(f); queueA += a.received(f, now: now) }
            queueB = []
            if !sent, a.sendCredits(dlci: a.dlci(forRemoteChannel: 1)) ?? 0 > 0 {
                sent = true
                queueA += a.send(dlci: a.dlci(forRemoteChannel: 1), Array("hello over RFCOMM".utf8))
            }
            if queueA.isEmpty && sent { break }
        }
        for case .transmit(let f) in a.close(dlci: a.dlci(forRemoteChannel: 1), now: 1) { toB.append(f) }
        return (toB, toA)
    }

    /// Byte 0: bit 0 set makes this side the initiator opening the peer's channel 1, else a responder
    /// listening on channel 1. The rest is RFCOMM frames (L2CAP SDUs) from the peer (``FuzzChunks``).
    static let rfcomm = FuzzTarget(
        name: "rfcomm",
        summary: "RFCOMMSession.received: frames with FCS, multiplexer commands (PN, MSC, RPN, RLS, test), credits",
        seeds: {
            let (responder, initiator) = rfcommExchange()
            return [(name: "responder", bytes: [0] + FuzzChunks.join(responder)),
                    (name: "initiator", bytes: [1] + FuzzChunks.join(initiator))]
        },
        run: { input in
            guard let mode = input.first else { return }
            let initiator = mode & 1 != 0
            var session = RFCOMMSession(initiator: initiator, peerMTU: 672, localMTU: 672)
            session.listen(channel: 1)
            if initiator { _ = session.open(channel: 1, now: 0) }
            var now = 0.0
            for sdu in FuzzChunks.split(Array(input.dropFirst())) {
                now += 0.25
                _ = try? RFCOMMFrame.parse(sdu)
                for case .channelOpened(let dlci, _, _) in session.received(sdu, now: now) {
                    _ = session.send(dlci: dlci, [UInt8](repeating: 0x41, count: 1200))
                }
            }
            _ = session.tick(now: now + 30)
            _ = session.tick(now: now + 300)
            _ = session.lowerLayerClosed(reason: "fuzz")
        }
    )
}
