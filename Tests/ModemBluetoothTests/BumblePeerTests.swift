import Foundation
import ModemTestSupport
import ProcessTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The Bumble peer (`scripts/bt-peer.py`) driven by hand-written HCI packets over raw H4/TCP:
/// proves that the peer's controller answers as the plan says before any of our stack runs on it.
@Suite(.serialized, .requires(BumblePeer.venv)) struct BumblePeerTests {
    private func startPeer(_ arguments: [String]) async throws -> BumblePeer {
        try await BumblePeer.start(arguments)
    }

    @Test func testResetAddressInquiryAndNamesWithTwoExtraDevices() async throws {
        let peer = try await startPeer(["--extra-devices", "2"])
        defer { peer.stop() }
        #expect(peer.deviceAddress == "00:1B:DC:00:00:0B")
        let client = try H4TestClient(port: peer.port)

        // The controller sends nothing first; HCI_Reset is answered with exactly this Command Complete.
        try client.send([0x01, 0x03, 0x0C, 0x00])
        #expect(try client.packet() == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])

        // Read_BD_ADDR: status 0, the address least significant byte first.
        let address = try client.command(0x1009)
        #expect(address.first == 0x00)
        #expect(formatAddress(Array(address.dropFirst())) == peer.hostAddress)

        // Read_Buffer_Size: the default 1021 x 8.
        let buffers = try client.command(0x1005)
        #expect(buffers == [0x00, 0xFD, 0x03, 0x00, 0x08, 0x00, 0x00, 0x00])

        // A vendor command the controller does not know: Command Complete 0x01, never silence.
        #expect(try client.command(0xFC01) == [0x01])
        // A known command with its parameters missing: invalid parameters (0x12), again never silence.
        #expect(try client.command(0x0C1A) == [0x12])

        // Extended inquiry: 3 devices, each with its complete local name in the EIR.
        #expect(try client.command(0x0C45, [0x02]) == [0x00])
        try client.sendCommand(0x0401, [0x33, 0x8B, 0x9E, 0x02, 0x00])
        #expect(try client.packet() == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x01, 0x04])
        var found: [String: String] = [:]
        while true {
            let event = try client.packet()
            #expect(event[0] == 0x04)
            if event[1] == 0x01 { #expect(event[3] == 0x00); break }
            #expect(event[1] == 0x2F, "an Extended Inquiry Result after Write_Inquiry_Mode 2")
            #expect(event.count == (3 + 255))
            let address = formatAddress(Array(event[4..<10]))
            found[address] = eirName(Array(event[18...]))
        }
        #expect(found == ["00:1B:DC:00:00:0B": "Bumble Echo", "00:1B:DC:00:01:02": "Echo 2", "00:1B:DC:00:01:03": "Echo 3"])

        // Standard inquiry results (mode 0) carry the same addresses without names.
        #expect(try client.command(0x0C45, [0x00]) == [0x00])
        try client.sendCommand(0x0401, [0x33, 0x8B, 0x9E, 0x01, 0x01])  // at most one response
        _ = try client.packet()
        let standard = try client.packet()
        #expect(Array(standard[0...3]) == [0x04, 0x02, 15, 0x01])
        #expect(formatAddress(Array(standard[4..<10])) == "00:1B:DC:00:00:0B")
        #expect(Array(try client.packet()[0...3]) == [0x04, 0x01, 0x01, 0x00])

        // Remote_Name_Request: a known device's name; an unknown address times out with 0x04.
        try client.sendCommand(0x0419, [0x02, 0x01, 0x00, 0xDC, 0x1B, 0x00, 0x01, 0x00, 0x00, 0x00])
        #expect(try client.packet() == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x19, 0x04])
        let name = try client.packet()
        #expect(Array(name[0...3]) == [0x04, 0x07, 255, 0x00])
        #expect(String(decoding: name[10...].prefix { $0 != 0 }, as: UTF8.self) == "Echo 2")
        try client.sendCommand(0x0419, [0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x01, 0x00, 0x00, 0x00])
        _ = try client.packet()
        #expect(Array(try client.packet()[0...3]) == [0x04, 0x07, 255, 0x04])

        // Create_Connection to nobody: Command Status 0, then Connection Complete with page timeout.
        try client.sendCommand(0x0405, [0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x18, 0xCC, 0x01, 0x00, 0x00, 0x00, 0x01])
        #expect(try client.packet() == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x05, 0x04])
        let failed = try client.packet()
        #expect(Array(failed[0...3]) == [0x04, 0x03, 11, 0x04])
    }

    @Test func testSmallACLBuffersSplitTheDeviceDataAndDisconnectReasonsPassThrough() async throws {
        let peer = try await startPeer(["--acl-mtu", "27", "--acl-count", "2"])
        defer { peer.stop() }
        var client = try H4TestClient(port: peer.port)
        try client.send([0x01, 0x03, 0x0C, 0x00])
        _ = try client.packet()
        #expect(try client.command(0x1005) == [0x00, 27, 0x00, 0x00, 2, 0x00, 0x00, 0x00])

        // Page the echo device: Command Status, then Connection Complete with a handle.
        let device: [UInt8] = [0x0B, 0x00, 0x00, 0xDC, 0x1B, 0x00]
        try client.sendCommand(0x0405, device + [0x18, 0xCC, 0x01, 0x00, 0x00, 0x00, 0x01])
        #expect(try client.packet() == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x05, 0x04])
        let complete = try client.packet(until: { $0[1] == 0x03 })
        #expect(complete[3] == 0x00, "Connection Complete status")
        #expect(Array(complete[6..<12]) == device)
        let handle = UInt16(complete[4]) | UInt16(complete[5]) << 8

        // An L2CAP Echo Request of 100 bytes (two 27-byte-or-less fragments from us); Bumble's
        // Echo Response (4 + 4 + 100 bytes) must come back in fragments of at most 27 bytes.
        let payload = (0..<100).map { UInt8($0) }
        var pdu: [UInt8] = [0x68, 0x00, 0x01, 0x00]  // length 104, CID 1 (signalling)
        pdu += [0x08, 0x07, 0x64, 0x00] + payload   // Echo Request, identifier 7, length 100
        for (index, start) in stride(from: 0, to: pdu.count, by: 27).enumerated() {
            let chunk = Array(pdu[start..<min(start + 27, pdu.count)])
            let flags: UInt16 = index == 0 ? 0x2000 : 0x1000
            let field = handle | flags
            try client.send([0x02, UInt8(field & 0xFF), UInt8(field >> 8), UInt8(chunk.count), 0x00] + chunk)
        }
        var response: [UInt8] = []
        var fragments = 0
        while response.count < 4 + 4 + 100 {
            let packet = try client.packet(until: { $0[0] == 0x02 })
            let field = UInt16(packet[1]) | UInt16(packet[2]) << 8
            let length = Int(packet[3]) | Int(packet[4]) << 8
            #expect((field & 0x0FFF) == handle)
            #expect((field >> 12 & 0x3) == (fragments == 0 ? 0b10 : 0b01), "packet boundary flag")
            #expect(length <= 27)
            response += packet[5...]
            fragments += 1
        }
        #expect(fragments == 4)
        #expect(Array(response[0..<8]) == [0x68, 0x00, 0x01, 0x00, 0x09, 0x07, 0x64, 0x00])
        #expect(Array(response[8...]) == payload)

        // Disconnect with 0x13: we hear 0x16 (terminated by the local host), the device hears 0x13.
        try client.sendCommand(0x0406, [UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13])
        #expect(try client.packet(until: { $0[1] == 0x0F }) == [0x04, 0x0F, 0x04, 0x00, 0x01, 0x06, 0x04])
        let disconnected = try client.packet(until: { $0[1] == 0x05 })
        #expect(disconnected == [0x04, 0x05, 0x04, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x16])
        let down = await peer.waitForLine(startingWith: "PEER-LINK down", timeout: H4TestClient.guardSeconds)
        #expect(down == "PEER-LINK down address=\(peer.hostAddress) reason=0x13")

        // Disconnect of a handle that is gone: Command Status 0x02 (unknown connection identifier).
        try client.sendCommand(0x0406, [UInt8(handle & 0xFF), UInt8(handle >> 8), 0x13])
        #expect(try client.packet() == [0x04, 0x0F, 0x04, 0x02, 0x01, 0x06, 0x04])

        // One client at a time: a second one is closed (the close itself is awaited, not a quiet spell).
        let second = try H4TestClient(port: peer.port)
        do {
            _ = try second.packet()
            Issue.record("a second client is closed at once")
        } catch let caught {
            let error: any Error = caught
            #expect("\(error)" == "the peer closed the connection")
        }
        // After the first leaves, a new one starts afresh with Reset. The peer frees its place when it
        // has seen the first go: until then a newcomer is closed as a second client, so try again.
        client.close()
        let deadline = Date().addingTimeInterval(H4TestClient.guardSeconds)
        var reset: [UInt8]?
        while reset == nil {
            client = try H4TestClient(port: peer.port)
            do {
                try client.send([0x01, 0x03, 0x0C, 0x00])
                reset = try client.packet()
            } catch let error as TestSupportError
                        where error.description == "the peer closed the connection" || error.description.hasPrefix("send: errno") {
                client.close()
                guard Date() < deadline else { Issue.record("the peer still closed newcomers \(H4TestClient.guardSeconds) s after the first client left"); return }
                usleep(10_000)
            }
        }
        #expect(reset == [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
    }

    @Test func testExposeBServesTheDeviceAddressOnASecondPort() async throws {
        let peer = try await startPeer(["--expose-b", "0"])
        defer { peer.stop() }
        let portB = try #require(peer.portB)
        #expect(portB != peer.port)
        #expect(peer.echoAddress == "00:1B:DC:00:00:0C")
        let b = try H4TestClient(port: portB)
        try b.send([0x01, 0x03, 0x0C, 0x00])
        _ = try b.packet()
        #expect(formatAddress(Array(try b.command(0x1009).dropFirst())) == "00:1B:DC:00:00:0B")
    }

    private func formatAddress(_ wire: [UInt8]) -> String {
        wire.reversed().map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// The complete (0x09) or shortened (0x08) local name in an EIR block.
    private func eirName(_ eir: [UInt8]) -> String? {
        var index = 0
        while index < eir.count, eir[index] != 0 {
            let length = Int(eir[index])
            guard index + 1 + length <= eir.count else { return nil }
            if eir[index + 1] == 0x09 || eir[index + 1] == 0x08 {
                return String(decoding: eir[(index + 2)..<(index + 1 + length)], as: UTF8.self)
            }
            index += 1 + length
        }
        return nil
    }
}

/// A raw H4-over-TCP client for these tests: blocking socket, whole packets by their headers.
private final class H4TestClient {
    /// The hang guard of every wait for the peer (seconds): far above its answers' milliseconds and its
    /// virtual page and inquiry timeouts (at most 1 s, scripts/bt-peer.py).
    static let guardSeconds = 60.0

    private var fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(port.bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestSupportError("connect to 127.0.0.1:\(port): errno \(code)")
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ bytes: [UInt8]) throws {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n == bytes.count else { throw TestSupportError("send: errno \(errno)") }
    }

    func sendCommand(_ opcode: UInt16, _ parameters: [UInt8] = []) throws {
        try send([0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters)
    }

    /// Sends a command and returns the return parameters of its Command Complete.
    func command(_ opcode: UInt16, _ parameters: [UInt8] = []) throws -> [UInt8] {
        try sendCommand(opcode, parameters)
        let event = try packet(until: { $0[1] == 0x0E || $0[1] == 0x0F })
        guard event[1] == 0x0E, event.count >= 6, UInt16(event[4]) | UInt16(event[5]) << 8 == opcode else {
            throw TestSupportError("no Command Complete for 0x\(String(opcode, radix: 16)): \(event)")
        }
        return Array(event[6...])
    }

    /// The next packet that satisfies `wanted` (others are skipped), waiting up to `timeout` seconds.
    func packet(timeout: Double = H4TestClient.guardSeconds, until wanted: ([UInt8]) -> Bool) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let next = try packet(timeout: max(0.01, deadline.timeIntervalSinceNow))
            if wanted(next) { return next }
        }
    }

    /// The next whole H4 packet (indicator included), waiting up to `timeout` seconds.
    func packet(timeout: Double = H4TestClient.guardSeconds) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let length = wholeLength() {
                defer { buffer.removeFirst(length) }
                return Array(buffer[0..<length])
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestSupportError("no whole packet within \(timeout) s; have \(buffer)") }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw TestSupportError("the peer closed the connection") }
            buffer += chunk[0..<n]
        }
    }

    private func wholeLength() -> Int? {
        guard let indicator = buffer.first else { return nil }
        let header: Int, length: Int
        switch indicator {
        case 0x04:
            guard buffer.count >= 3 else { return nil }
            header = 3; length = Int(buffer[2])
        case 0x02:
            guard buffer.count >= 5 else { return nil }
            header = 5; length = Int(buffer[3]) | Int(buffer[4]) << 8
        default:
            return buffer.count  // not expected from a controller: hand it over whole so the test fails
        }
        return buffer.count >= header + length ? header + length : nil
    }
}
