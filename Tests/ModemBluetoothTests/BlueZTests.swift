import Foundation
import Testing
@testable import ModemBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// The kernel path: address layouts, the errno mapping, and the one failure this machine shows
/// (a kernel without AF_BLUETOOTH), exactly as the CLI will print it.
@Suite(.serialized) struct BlueZTests {
    private let device = BDAddress("00:1B:DC:00:00:0B")!

    /// Whether this kernel refuses AF_BLUETOOTH with EAFNOSUPPORT (the case the no-kernel checks are
    /// about; a kernel with Bluetooth skips them, with the reason shown).
    fileprivate static var kernelHasNoBluetooth: Bool {
        let fd = socket(31, Int32(SOCK_RAW.rawValue), 1)
        if fd >= 0 { close(fd); return false }
        return errno == EAFNOSUPPORT
    }

    fileprivate static let noKernel = BluetoothError.noBluetooth(
        "this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); use --hci tcp:HOST:PORT or --hci serial:DEVICE")

    @Test(.enabled(if: kernelHasNoBluetooth, "this kernel has Bluetooth sockets: the no-kernel-Bluetooth path cannot be seen here")) func testProbeFailsWithTheNoKernelMessage() throws {
        do {
            _ = try BlueZ.probe()
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect(error as? BluetoothError == Self.noKernel)
            #expect((error as? BluetoothError)?.seedOpenCode == -4)
        }
    }

    @Test(.enabled(if: kernelHasNoBluetooth, "this kernel has Bluetooth sockets: the no-kernel-Bluetooth path cannot be seen here")) func testEverySocketKindFailsTheSameWayWithoutKernelBluetooth() throws {
        do {
            _ = try BlueZRFCOMMStream(connectingTo: device, channel: 1)
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect(error as? BluetoothError == Self.noKernel)
        }
        do {
            _ = try BlueZSocket.l2cap(connectingTo: device, psm: 1)
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect(error as? BluetoothError == Self.noKernel)
        }
        do {
            _ = try BlueZSocket.rawHCI(device: 0)
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect(error as? BluetoothError == Self.noKernel)
        }
    }

    @Test func testAChannelOutsideOneToThirtyIsRefusedBeforeAnySocket() throws {
        for channel: UInt8 in [0, 31, 255] {
            do {
                _ = try BlueZSocket.rfcomm(connectingTo: device, channel: channel)
                Issue.record("expected an error")
            } catch let caught {
                let error: any Error = caught
                guard case .invalidArgument = error as? BluetoothError else { Issue.record("\(error)"); continue }
            }
        }
    }

    @Test func testErrnoMapping() {
        #expect(BlueZSocket.error(errno: EAFNOSUPPORT, doing: "x") == Self.noKernel)
        #expect(BlueZSocket.error(errno: ENODEV, doing: "bind to hci0") == .noBluetooth("no Bluetooth adapter"))
        for code in [ENETDOWN, EHOSTDOWN, ERFKILL] {
            guard case .notPowered(let message) = BlueZSocket.error(errno: code, doing: "bind to hci0") else {
                Issue.record("errno \(code) should be notPowered"); continue
            }
            #expect(message.contains("bind to hci0"), "\(message)")
            #expect(BlueZSocket.error(errno: code, doing: "x").seedOpenCode == -5)
        }
        #expect(BlueZSocket.error(errno: ECONNREFUSED, doing: "RFCOMM connect") == .connectionFailed("RFCOMM connect: the device refused (ECONNREFUSED)"))
        #expect(BlueZSocket.error(errno: EHOSTUNREACH, doing: "RFCOMM connect") == .connectionFailed("RFCOMM connect: no answer from the device (EHOSTUNREACH)"))
        #expect(BlueZSocket.error(errno: ETIMEDOUT, doing: "RFCOMM connect") == .connectionFailed("RFCOMM connect: timed out (ETIMEDOUT)"))
        guard case .unknown(let message) = BlueZSocket.error(errno: EINVAL, doing: "send") else {
            Issue.record("EINVAL should be unknown"); return
        }
        #expect(message.hasPrefix("send failed: ") && message.hasSuffix("(errno \(EINVAL))"), "\(message)")
        // A reset, broken or unconnected socket is the device gone: a case of its own, naming the call and the errno.
        for code in [ECONNRESET, EPIPE, ENOTCONN] {
            guard case .disconnected(let words) = BlueZSocket.error(errno: code, doing: "receive") else {
                Issue.record("errno \(code) should be disconnected"); continue
            }
            #expect(words.hasPrefix("receive failed: ") && words.hasSuffix("(errno \(code))"), "\(words)")
        }
    }

    @Test func testSocketAddressLayouts() {
        // sockaddr_rc: family 31 (host order), bdaddr least significant byte first, channel, padding.
        #expect(BlueZSocket.rfcommAddress(device, channel: 1) == [31, 0, 0x0B, 0x00, 0x00, 0xDC, 0x1B, 0x00, 1, 0])
        // sockaddr_l2: family, PSM 1 little-endian, bdaddr, CID 0, BDADDR_BREDR, padding.
        #expect(BlueZSocket.l2capAddress(device, psm: 0x0001) == [31, 0, 1, 0, 0x0B, 0x00, 0x00, 0xDC, 0x1B, 0x00, 0, 0, 0, 0])
        #expect(BlueZSocket.l2capAddress(device, psm: 0x1001)[2...3] == [0x01, 0x10])
        // sockaddr_hci: family, dev, channel (0: raw).
        #expect(BlueZSocket.hciAddress(device: 1, channel: 0) == [31, 0, 1, 0, 0, 0])
        // hci_filter: events only (bit 4), all event codes, no opcode.
        #expect(BlueZSocket.hciEventFilter() == ([0x10, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8) + [0, 0, 0, 0]))
    }

    @Test func testAStreamSocketReadsWritesAndSeesTheEnd() throws {
        // The stream's read/write/end logic on a Unix socket pair (no Bluetooth needed).
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let socket = BlueZSocket(adopting: fds[0])
        #expect(try socket.receive(timeout: 0.05) == [], "nothing there yet")
        #expect(!socket.isAtEnd)
        try socket.send([1, 2, 3])
        var got = [UInt8](repeating: 0, count: 8)
        #expect(read(fds[1], &got, 8) == 3)
        #expect(Array(got[0..<3]) == [1, 2, 3])
        let reply: [UInt8] = [9, 8]
        #expect(write(fds[1], reply, 2) == 2)
        #expect(try socket.receive(timeout: 60) == [9, 8])
        close(fds[1])
        #expect(try socket.receive(timeout: 60) == [])
        #expect(socket.isAtEnd)
    }
}

/// The kernel path's real-time figure: the probe fails at once (under 0.5 s) on a kernel without
/// Bluetooth. A `...RealTimeTests` class: scripts/test.sh runs these alone, one at a time.
@Suite(.serialized) struct BlueZProbeRealTimeTests {
    @Test(.enabled(if: BlueZTests.kernelHasNoBluetooth, "this kernel has Bluetooth sockets: the no-kernel-Bluetooth path cannot be seen here"))
    func testProbeFailsAtOnceWithTheNoKernelMessage() throws {
        let start = Date()
        do {
            _ = try BlueZ.probe()
            Issue.record("expected an error")
        } catch let caught {
            let error: any Error = caught
            #expect(error as? BluetoothError == BlueZTests.noKernel)
            #expect((error as? BluetoothError)?.description == "no Bluetooth: this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); use --hci tcp:HOST:PORT or --hci serial:DEVICE")
            #expect((error as? BluetoothError)?.seedOpenCode == -4)
        }
        #expect(Date().timeIntervalSince(start) < 0.5, "at once")
    }
}
