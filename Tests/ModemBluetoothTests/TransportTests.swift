import ProcessTestSupport
import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import ModemBluetooth

@Suite(.serialized) struct TransportTests {
    private let packets: [HCIPacket] = [
        .event(code: 0x0E, parameters: [1, 0x03, 0x0C, 0x00]),
        .acl(handle: 1, boundary: 2, broadcast: 0, data: Array(repeating: 0x5A, count: 3000)),
        .event(code: 0x13, parameters: [1, 1, 0, 1, 0]),
        .event(code: 0x05, parameters: []),
    ]

    /// Receives until `count` packets arrived (60 s at most: a hang guard).
    private func receive(_ transport: any HCITransport, count: Int) throws -> [HCIPacket] {
        var out: [HCIPacket] = []
        let deadline = Date().addingTimeInterval(60)   // a hang guard
        while out.count < count, Date() < deadline {
            var p = pollfd(fd: transport.fileDescriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 100)
            out += try transport.receive()
        }
        return out
    }

    private func readAll(_ fd: Int32, count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(60)   // a hang guard
        while out.count < count, Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            #expect(n > 0)
            if n <= 0 { return }
            offset += n
        }
    }

    /// A listening socket on 127.0.0.1 and its port.
    private func listener() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        #expect(ok)
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    @Test func testTCPCarriesPacketsBothWaysAndReportsTheEnd() throws {
        let (server, port) = try listener()
        defer { close(server) }
        let transport = try H4TCPTransport(host: "127.0.0.1", port: port)
        let peer = accept(server, nil, nil)
        #expect(peer >= 0)
        var nodelay: Int32 = 0
        var size = socklen_t(4)
        getsockopt(transport.fileDescriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &nodelay, &size)
        #expect(nodelay == 1)

        #expect(try transport.receive() == [], "nothing readable: no packets, no blocking")
        // Split and merged on the wire: bytes in odd chunks.
        let stream = packets.flatMap(\.h4)
        var offset = 0
        for chunk in [1, 2, 700, 5, 3000] where offset < stream.count {
            writeAll(peer, Array(stream[offset..<min(stream.count, offset + chunk)]))
            offset += chunk
        }
        writeAll(peer, Array(stream[min(offset, stream.count)...]))
        #expect(try receive(transport, count: packets.count) == packets)

        try transport.send(HCICommand.reset())
        try transport.send(.acl(handle: 2, boundary: 2, broadcast: 0, data: [1, 2, 3]))
        let expected = HCICommand.reset().h4 + HCIPacket.acl(handle: 2, boundary: 2, broadcast: 0, data: [1, 2, 3]).h4
        #expect(readAll(peer, count: expected.count) == expected)

        // A last packet then the end: the packet first, then transportClosed.
        writeAll(peer, packets[0].h4)
        close(peer)
        var got: [HCIPacket] = []
        var failure: Error?
        let deadline = Date().addingTimeInterval(60)   // a hang guard
        while failure == nil, Date() < deadline {
            var p = pollfd(fd: transport.fileDescriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 100)
            do { got += try transport.receive() } catch { failure = error }
        }
        #expect(got == [packets[0]])
        #expect(failure as? BluetoothError == .transportClosed("the controller at tcp:127.0.0.1:\(port) closed the connection"))
        // Said once, however often it is wrapped.
        let words = (failure as? BluetoothError)?.description ?? ""
        #expect(BluetoothError.transportClosedWords(words) == words)
        #expect(words == "the controller transport closed: the controller at tcp:127.0.0.1:\(port) closed the connection")
        transport.close()
        #expect(transport.fileDescriptor == -1)
        #expect(throws: (any Error).self) { _ = try transport.send(HCICommand.reset()) }
    }

    @Test func testTCPJunkLosesTheFraming() throws {
        let (server, port) = try listener()
        defer { close(server) }
        let transport = try H4TCPTransport(host: "127.0.0.1", port: port)
        let peer = accept(server, nil, nil)
        defer { close(peer) }
        writeAll(peer, [0x04, 0x05, 0x04, 0, 1, 0, 0x13, 0x07, 0x07])
        do {
            _ = try receive(transport, count: 10)
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            guard case let .transportClosed(message)? = error as? BluetoothError else { Issue.record("\(error)"); return }
            #expect(message.hasPrefix("H4 framing lost"), "\(message)")
        }
    }

    @Test func testARefusedConnectionSaysSo() throws {
        let refused = RefusedPort()  // bound, never listening: connections are refused
        let port = UInt16(refused.port)
        do {
            _ = try H4TCPTransport(host: "127.0.0.1", port: port)
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect(error as? BluetoothError == .noBluetooth("no controller at tcp:127.0.0.1:\(port): connection refused"))
        }
        do {
            _ = try HCITransportAddress(parsing: "tcp:127.0.0.1:\(port)").open(capture: nil)
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect("\(error)" == "no Bluetooth: no controller at tcp:127.0.0.1:\(port): connection refused")
        }
    }

    /// A pseudo-terminal pair: the master's descriptor and the slave's path.
    private func openPTY() throws -> (master: Int32, path: String) {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        guard master >= 0 else { throw PTYError(description: "cannot open /dev/ptmx: errno \(errno)") }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        // TIOCSPTLCK and TIOCGPTN (asm-generic ioctls; the importer cannot expand their _IOW/_IOR macros).
        guard ioctl(master, UInt(0x4004_5431), &unlock) == 0, ioctl(master, UInt(0x8004_5430), &number) == 0 else {
            close(master)
            throw PTYError(description: "cannot unlock the pty or read its number: errno \(errno)")
        }
        return (master, "/dev/pts/\(number)")
    }

    /// A pseudo-terminal could not be made.
    private struct PTYError: Error, CustomStringConvertible { let description: String }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/ptmx"), "no /dev/ptmx here (pseudo-terminals)"))
    func testSerialOverAPseudoTerminal() throws {
        let (master, path) = try openPTY()
        defer { close(master) }
        let transport = try H4SerialTransport(path: path)
        defer { transport.close() }
        #expect(transport.baud == 115_200)
        var t = termios()
        #expect(tcgetattr(transport.fileDescriptor, &t) == 0)
        #expect((t.c_lflag & tcflag_t(ICANON | ECHO)) == 0, "raw: no line editing, no echo")
        #expect(cfgetospeed(&t) == speed_t(B115200))

        // H4 bytes written on the master arrive as packets, a byte at a time too.
        let stream = packets.flatMap(\.h4)
        writeAll(master, Array(stream.prefix(3)))
        for byte in stream[3..<10] { writeAll(master, [byte]) }
        writeAll(master, Array(stream[10...]))
        #expect(try receive(transport, count: packets.count) == packets)

        try transport.send(HCICommand.readBDADDR())
        #expect(readAll(master, count: 4) == HCICommand.readBDADDR().h4)
    }

    @Test func testSerialErrorsNameTheDevice() throws {
        do {
            _ = try H4SerialTransport(path: "/dev/no-such-tty")
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect(error as? BluetoothError == .noBluetooth("no controller at serial:/dev/no-such-tty,115200: no such device"))
        }
        do {
            _ = try H4SerialTransport(path: "/dev/null")
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            if case let .noBluetooth(message)? = error as? BluetoothError {
                #expect(message.contains("not a serial port"), "\(message)")
            } else {
                Issue.record("\(error)")
            }
        }
        do {
            _ = try H4SerialTransport(path: "/dev/null", baud: 12345)
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            guard case .invalidArgument? = error as? BluetoothError else { Issue.record("\(error)"); return }
        }
    }

    /// Whether this kernel refuses AF_BLUETOOTH with EAFNOSUPPORT.
    private static var kernelHasNoBluetooth: Bool {
        let probe = socket(31, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 1)
        if probe >= 0 { close(probe); return false }
        return errno == EAFNOSUPPORT
    }

    @Test(.enabled(if: kernelHasNoBluetooth, "this kernel has Bluetooth sockets: the no-kernel-Bluetooth path cannot be seen here"))
    func testUserChannelFailsInOneClearLineWithoutKernelBluetooth() throws {
        for spec in ["hci0", "hci3"] {
            do {
                _ = try HCITransportAddress(parsing: spec).open()
                Issue.record("expected an error")
            } catch let caught {
                let error: any Error = caught
                #expect(error as? BluetoothError == .noBluetooth("this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT)"))
            }
        }
    }

    @Test func testAddressesParseAndBadOnesSayWhy() throws {
        #expect(try HCITransportAddress(parsing: "tcp:127.0.0.1:5000") == .tcp(host: "127.0.0.1", port: 5000))
        #expect(try HCITransportAddress(parsing: "tcp:localhost:1") == .tcp(host: "localhost", port: 1))
        #expect(try HCITransportAddress(parsing: "tcp:[::1]:65535") == .tcp(host: "::1", port: 65535))
        #expect(try HCITransportAddress(parsing: "serial:/dev/ttyUSB0") == .serial(path: "/dev/ttyUSB0", baud: 115_200))
        #expect(try HCITransportAddress(parsing: "serial:/dev/ttyACM1,921600") == .serial(path: "/dev/ttyACM1", baud: 921_600))
        #expect(try HCITransportAddress(parsing: "hci0") == .userChannel(index: 0))
        #expect(try HCITransportAddress(parsing: "hci12") == .userChannel(index: 12))
        #expect(HCITransportAddress.tcp(host: "::1", port: 5).description == "tcp:[::1]:5")
        #expect(HCITransportAddress.serial(path: "/dev/ttyS0", baud: 9600).description == "serial:/dev/ttyS0,9600")
        let bad: [(String, String)] = [
            ("", "use tcp:HOST:PORT, serial:DEVICE[,BAUD] or hciN"),
            ("usb:0", "use tcp:HOST:PORT"),
            ("tcp:", "no port"),
            ("tcp:host", "no port"),
            ("tcp::5000", "no host"),
            ("tcp:host:0", "'0' is not a port"),
            ("tcp:host:70000", "'70000' is not a port"),
            ("tcp:host:http", "'http' is not a port"),
            ("serial:", "no device"),
            ("serial:,115200", "no device"),
            ("serial:/dev/ttyS0,fast", "'fast' is not a supported rate"),
            ("serial:/dev/ttyS0,12345", "'12345' is not a supported rate"),
            ("hci", "expected hciN"),
            ("hcix", "expected hciN"),
            ("hci-1", "expected hciN"),
        ]
        for (spec, why) in bad {
            do {
                _ = try HCITransportAddress(parsing: spec)
                Issue.record("\(spec)")
            } catch let caught {
                let error: any Error = caught
                guard case let .invalidArgument(message)? = error as? BluetoothError else { Issue.record("\(error)"); continue }
                #expect(message.contains(why), "\(spec): \(message)")
                #expect(message.contains("'\(spec)'"), "\(spec): \(message)")
            }
        }
    }

    @Test func testCaptureRecordsBothDirections() throws {
        let (server, port) = try listener()
        defer { close(server) }
        let path = NSTemporaryDirectory() + "capture-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).pcap"
        defer { unlink(path) }
        let writer = try PcapWriter(path: path)
        let transport = try HCITransportAddress(parsing: "tcp:127.0.0.1:\(port)").open(capture: writer)
        #expect(transport is CapturingHCITransport)
        let peer = accept(server, nil, nil)
        defer { close(peer) }
        try transport.send(HCICommand.reset())
        writeAll(peer, packets[0].h4)
        #expect(try receive(transport, count: 1) == [packets[0]])
        transport.close()
        writer.close()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var r = ByteReader(bytes, offset: 24)
        var seen: [(Bool, HCIPacket)] = []
        while !r.isAtEnd {
            try r.skip(8)
            let length = Int(try r.u32le())
            try r.skip(4)
            let direction = try r.u32be()
            seen.append((direction == 0, try HCIPacket(h4: try r.bytes(length - 4))))
        }
        #expect(seen.map(\.0) == [true, false])
        #expect(seen.map(\.1) == [HCICommand.reset(), packets[0]])
    }
}
