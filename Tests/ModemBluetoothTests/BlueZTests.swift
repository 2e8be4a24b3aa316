import XCTest
@testable import ModemBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// The kernel path: address layouts, the errno mapping, and the one failure this machine shows
/// (a kernel without AF_BLUETOOTH), exactly as the CLI will print it.
final class BlueZTests: XCTestCase {
    private let device = BDAddress("00:1B:DC:00:00:0B")!

    /// Skips when this kernel has Bluetooth (then the EAFNOSUPPORT path cannot be seen here).
    fileprivate static func requireNoKernelBluetooth() throws {
        let fd = socket(31, Int32(SOCK_RAW.rawValue), 1)
        if fd >= 0 {
            close(fd)
            throw XCTSkip("this kernel has AF_BLUETOOTH; the EAFNOSUPPORT path is not reachable here")
        }
        XCTAssertEqual(errno, EAFNOSUPPORT, "socket(AF_BLUETOOTH) failed, but not with EAFNOSUPPORT")
    }

    fileprivate static let noKernel = BluetoothError.noBluetooth(
        "this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); use --hci tcp:HOST:PORT or --hci serial:DEVICE")

    func testProbeFailsWithTheNoKernelMessage() throws {
        try Self.requireNoKernelBluetooth()
        XCTAssertThrowsError(try BlueZ.probe()) { error in
            XCTAssertEqual(error as? BluetoothError, Self.noKernel)
            XCTAssertEqual((error as? BluetoothError)?.seedOpenCode, -4)
        }
    }

    func testEverySocketKindFailsTheSameWayWithoutKernelBluetooth() throws {
        try Self.requireNoKernelBluetooth()
        XCTAssertThrowsError(try BlueZRFCOMMStream(connectingTo: device, channel: 1)) { XCTAssertEqual($0 as? BluetoothError, Self.noKernel) }
        XCTAssertThrowsError(try BlueZSocket.l2cap(connectingTo: device, psm: 1)) { XCTAssertEqual($0 as? BluetoothError, Self.noKernel) }
        XCTAssertThrowsError(try BlueZSocket.rawHCI(device: 0)) { XCTAssertEqual($0 as? BluetoothError, Self.noKernel) }
    }

    func testAChannelOutsideOneToThirtyIsRefusedBeforeAnySocket() {
        for channel: UInt8 in [0, 31, 255] {
            XCTAssertThrowsError(try BlueZSocket.rfcomm(connectingTo: device, channel: channel)) { error in
                guard case .invalidArgument = error as? BluetoothError else { return XCTFail("\(error)") }
            }
        }
    }

    func testErrnoMapping() {
        XCTAssertEqual(BlueZSocket.error(errno: EAFNOSUPPORT, doing: "x"), Self.noKernel)
        XCTAssertEqual(BlueZSocket.error(errno: ENODEV, doing: "bind to hci0"), .noBluetooth("no Bluetooth adapter"))
        for code in [ENETDOWN, EHOSTDOWN, ERFKILL] {
            guard case .notPowered(let message) = BlueZSocket.error(errno: code, doing: "bind to hci0") else {
                XCTFail("errno \(code) should be notPowered"); continue
            }
            XCTAssertTrue(message.contains("bind to hci0"), message)
            XCTAssertEqual(BlueZSocket.error(errno: code, doing: "x").seedOpenCode, -5)
        }
        XCTAssertEqual(BlueZSocket.error(errno: ECONNREFUSED, doing: "RFCOMM connect"),
                       .connectionFailed("RFCOMM connect: the device refused (ECONNREFUSED)"))
        XCTAssertEqual(BlueZSocket.error(errno: EHOSTUNREACH, doing: "RFCOMM connect"),
                       .connectionFailed("RFCOMM connect: no answer from the device (EHOSTUNREACH)"))
        XCTAssertEqual(BlueZSocket.error(errno: ETIMEDOUT, doing: "RFCOMM connect"),
                       .connectionFailed("RFCOMM connect: timed out (ETIMEDOUT)"))
        guard case .unknown(let message) = BlueZSocket.error(errno: EINVAL, doing: "send") else {
            return XCTFail("EINVAL should be unknown")
        }
        XCTAssertTrue(message.hasPrefix("send failed: ") && message.hasSuffix("(errno \(EINVAL))"), message)
    }

    func testSocketAddressLayouts() {
        // sockaddr_rc: family 31 (host order), bdaddr least significant byte first, channel, padding.
        XCTAssertEqual(BlueZSocket.rfcommAddress(device, channel: 1), [31, 0, 0x0B, 0x00, 0x00, 0xDC, 0x1B, 0x00, 1, 0])
        // sockaddr_l2: family, PSM 1 little-endian, bdaddr, CID 0, BDADDR_BREDR, padding.
        XCTAssertEqual(BlueZSocket.l2capAddress(device, psm: 0x0001), [31, 0, 1, 0, 0x0B, 0x00, 0x00, 0xDC, 0x1B, 0x00, 0, 0, 0, 0])
        XCTAssertEqual(BlueZSocket.l2capAddress(device, psm: 0x1001)[2...3], [0x01, 0x10])
        // sockaddr_hci: family, dev, channel (0: raw).
        XCTAssertEqual(BlueZSocket.hciAddress(device: 1, channel: 0), [31, 0, 1, 0, 0, 0])
        // hci_filter: events only (bit 4), all event codes, no opcode.
        XCTAssertEqual(BlueZSocket.hciEventFilter(), [0x10, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8) + [0, 0, 0, 0])
    }

    func testAStreamSocketReadsWritesAndSeesTheEnd() throws {
        // The stream's read/write/end logic on a Unix socket pair (no Bluetooth needed).
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        let socket = BlueZSocket(adopting: fds[0])
        XCTAssertEqual(try socket.receive(timeout: 0.05), [], "nothing there yet")
        XCTAssertFalse(socket.isAtEnd)
        try socket.send([1, 2, 3])
        var got = [UInt8](repeating: 0, count: 8)
        XCTAssertEqual(read(fds[1], &got, 8), 3)
        XCTAssertEqual(Array(got[0..<3]), [1, 2, 3])
        let reply: [UInt8] = [9, 8]
        XCTAssertEqual(write(fds[1], reply, 2), 2)
        XCTAssertEqual(try socket.receive(timeout: 60), [9, 8])
        close(fds[1])
        XCTAssertEqual(try socket.receive(timeout: 60), [])
        XCTAssertTrue(socket.isAtEnd)
    }
}

/// The kernel path's real-time figure: the probe fails at once (under 0.5 s) on a kernel without
/// Bluetooth. A `...RealTimeTests` class: scripts/test.sh runs these alone, one at a time.
final class BlueZProbeRealTimeTests: XCTestCase {
    func testProbeFailsAtOnceWithTheNoKernelMessage() throws {
        try BlueZTests.requireNoKernelBluetooth()
        let start = Date()
        XCTAssertThrowsError(try BlueZ.probe()) { error in
            XCTAssertEqual(error as? BluetoothError, BlueZTests.noKernel)
            XCTAssertEqual((error as? BluetoothError)?.description,
                           "no Bluetooth: this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); use --hci tcp:HOST:PORT or --hci serial:DEVICE")
            XCTAssertEqual((error as? BluetoothError)?.seedOpenCode, -4)
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.5, "at once")
    }
}
