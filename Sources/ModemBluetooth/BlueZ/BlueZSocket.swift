#if canImport(Glibc)
import Glibc
import Synchronization
import ModemSockets

/// One Linux `AF_BLUETOOTH` socket (BlueZ's kernel side), owned: the descriptor closes when the
/// object goes. Every socket call of the kernel path is wrapped here once, and every failure
/// becomes a ``BluetoothError`` through ``error(errno:doing:)``. Linux `bluetooth.h`, `rfcomm.h`,
/// `l2cap.h` and `hci.h` give the constants and address layouts (docs/bluetooth-plan.md section 11).
public final class BlueZSocket: Sendable {
    /// `AF_BLUETOOTH`.
    public static let addressFamily: Int32 = 31
    /// `BTPROTO_L2CAP`.
    public static let protocolL2CAP: Int32 = 0
    /// `BTPROTO_HCI`.
    public static let protocolHCI: Int32 = 1
    /// `BTPROTO_RFCOMM`.
    public static let protocolRFCOMM: Int32 = 3
    /// `SOL_HCI`, the socket-option level of HCI sockets.
    static let levelHCI: Int32 = 0
    /// `HCI_FILTER`, the option that says which packets a raw HCI socket receives.
    static let optionHCIFilter: Int32 = 2

    /// The descriptor (for `poll`).
    public let fileDescriptor: Int32

    private init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// Takes ownership of an open descriptor (tests run the stream logic on a Unix socket pair).
    convenience init(adopting fileDescriptor: Int32) {
        self.init(fileDescriptor: fileDescriptor)
    }

    deinit { Glibc.close(fileDescriptor) }

    // MARK: Opening

    /// `socket(AF_BLUETOOTH, type | SOCK_CLOEXEC, proto)`; `what` names the socket in errors.
    public static func open(type: Int32, protocol proto: Int32, what: String) throws(BluetoothError) -> BlueZSocket {
        let fd = socket(addressFamily, type | Int32(SOCK_CLOEXEC.rawValue), proto)
        guard fd >= 0 else { throw error(errno: errno, doing: "socket(AF_BLUETOOTH) for \(what)") }
        return BlueZSocket(fileDescriptor: fd)
    }

    /// An RFCOMM stream socket connected to `channel` (1-30) of `address`: the byte stream itself.
    public static func rfcomm(connectingTo address: BDAddress, channel: UInt8, timeout: Double = 10) throws(BluetoothError) -> BlueZSocket {
        guard (1...30).contains(channel) else { throw .invalidArgument("RFCOMM channel \(channel): must be 1...30") }
        let socket = try open(type: Int32(SOCK_STREAM.rawValue), protocol: protocolRFCOMM, what: "RFCOMM")
        try socket.connect(to: rfcommAddress(address, channel: channel), timeout: timeout,
                           what: "RFCOMM connect to \(address) channel \(channel)")
        return socket
    }

    /// An L2CAP sequenced-packet socket connected to `psm` of `address` (PSM 1: SDP); each
    /// send and receive is one L2CAP SDU.
    public static func l2cap(connectingTo address: BDAddress, psm: UInt16, timeout: Double = 10) throws(BluetoothError) -> BlueZSocket {
        let socket = try open(type: Int32(SOCK_SEQPACKET.rawValue), protocol: protocolL2CAP, what: "L2CAP")
        try socket.connect(to: l2capAddress(address, psm: psm), timeout: timeout,
                           what: "L2CAP connect to \(address) PSM 0x\(String(psm, radix: 16))")
        return socket
    }

    /// A raw HCI socket bound to no adapter: for the adapter ioctls (``deviceInfo(device:)``, ``inquiry(device:seconds:)``).
    public static func hciControl() throws(BluetoothError) -> BlueZSocket {
        try open(type: Int32(SOCK_RAW.rawValue), protocol: protocolHCI, what: "HCI")
    }

    /// A raw HCI socket bound to adapter `device` (hci0 = 0) on channel 0 (`HCI_CHANNEL_RAW`, shared
    /// with bluetoothd), receiving every event: for inquiry and name requests. Each send and
    /// receive is one packet with its H4 indicator byte.
    public static func rawHCI(device: UInt16) throws(BluetoothError) -> BlueZSocket {
        let socket = try open(type: Int32(SOCK_RAW.rawValue), protocol: protocolHCI, what: "HCI")
        try socket.bind(to: hciAddress(device: device, channel: 0), what: "bind to hci\(device)")
        let filter = hciEventFilter()
        let rc = filter.withUnsafeBytes {
            setsockopt(socket.fileDescriptor, levelHCI, optionHCIFilter, $0.baseAddress, socklen_t($0.count))
        }
        guard rc == 0 else { throw error(errno: errno, doing: "setsockopt(HCI_FILTER) on hci\(device)") }
        return socket
    }

    // MARK: Addresses (the kernel's structures as bytes, host byte order where the kernel uses it)

    /// `struct sockaddr_rc { sa_family_t family; bdaddr_t bdaddr; uint8_t channel; }` (10 bytes with padding).
    static func rfcommAddress(_ address: BDAddress, channel: UInt8) -> [UInt8] {
        var bytes = family()
        bytes.append(address: address)
        bytes += [channel, 0]
        return bytes
    }

    /// `struct sockaddr_l2 { family; __le16 psm; bdaddr_t bdaddr; __le16 cid; uint8_t bdaddr_type; }`
    /// (14 bytes with padding; cid 0 and BDADDR_BREDR 0 for a connection-oriented channel).
    static func l2capAddress(_ address: BDAddress, psm: UInt16) -> [UInt8] {
        var bytes = family()
        bytes.appendLE(psm)
        bytes.append(address: address)
        bytes.appendLE(UInt16(0))
        bytes += [0, 0]
        return bytes
    }

    /// `struct sockaddr_hci { sa_family_t family; unsigned short dev; unsigned short channel; }`.
    static func hciAddress(device: UInt16, channel: UInt16) -> [UInt8] {
        var bytes = family()
        bytes += withUnsafeBytes(of: device) { Array($0) }
        bytes += withUnsafeBytes(of: channel) { Array($0) }
        return bytes
    }

    /// `struct hci_filter { uint32_t type_mask; uint32_t event_mask[2]; uint16_t opcode; }` (16 bytes
    /// with padding): event packets (type 0x04) only, every event code, any opcode.
    static func hciEventFilter() -> [UInt8] {
        var bytes: [UInt8] = []
        for word: UInt32 in [1 << 4, 0xFFFF_FFFF, 0xFFFF_FFFF] { bytes += withUnsafeBytes(of: word) { Array($0) } }
        bytes += [0, 0, 0, 0]
        return bytes
    }

    private static func family() -> [UInt8] {
        withUnsafeBytes(of: sa_family_t(addressFamily)) { Array($0) }
    }

    // MARK: Calls

    /// `ioctl(fd, request, buffer)` with `buffer` read and written in place; EINTR is retried
    /// unless `retryInterrupted` is false (then it is thrown as ``BluetoothError/unknown(_:)`` naming EINTR).
    func control(_ request: UInt, _ buffer: inout [UInt8], what: String, retryInterrupted: Bool = true) throws(BluetoothError) {
        while true {
            let rc = buffer.withUnsafeMutableBytes { Glibc.ioctl(fileDescriptor, request, $0.baseAddress!) }
            if rc >= 0 { return }
            if errno == EINTR && retryInterrupted { continue }
            throw Self.error(errno: errno, doing: what)
        }
    }

    /// The adapter's `struct hci_dev_info` (`HCIGETDEVINFO`): ENODEV (no such adapter) becomes
    /// ``BluetoothError/noBluetooth(_:)``.
    public func deviceInfo(device: UInt16) throws(BluetoothError) -> BlueZAdapterInfo {
        var buffer = BlueZAdapterInfo.request(device: device)
        try control(BlueZIoctl.getDeviceInfo, &buffer, what: "HCIGETDEVINFO for hci\(device)")
        do {
            return try BlueZAdapterInfo(parsing: buffer)
        } catch {
            throw .unknown("HCIGETDEVINFO for hci\(device): \(error.reason)")
        }
    }

    /// The kernel's inquiry (`HCIINQUIRY`, the cache flushed first): blocks for about `seconds`
    /// and returns what answered, at most 255 devices. An interruption (a signal) ends it early with
    /// ``BluetoothError/unknown(_:)`` naming EINTR.
    public func inquiry(device: UInt16, seconds: Double) throws(BluetoothError) -> [HCIInquiryResponse] {
        var buffer = BlueZInquiry.request(device: device, seconds: seconds)
        try control(BlueZIoctl.inquiry, &buffer, what: "HCIINQUIRY on hci\(device)", retryInterrupted: false)
        do {
            return try BlueZInquiry.responses(in: buffer)
        } catch {
            throw .unknown("HCIINQUIRY on hci\(device): \(error.reason)")
        }
    }

    /// Sets `SO_LINGER` to `seconds`: a later ``shutdown()`` waits that long for the kernel to close
    /// the connection in order (RFCOMM: the queued data, then DISC and its answer).
    public func setLinger(seconds: Int32) {
        var value = Glibc.linger(l_onoff: 1, l_linger: seconds)
        _ = setsockopt(fileDescriptor, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    private func bind(to address: [UInt8], what: String) throws(BluetoothError) {
        let rc = address.withUnsafeBytes {
            Glibc.bind(fileDescriptor, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))
        }
        guard rc == 0 else { throw Self.error(errno: errno, doing: what) }
    }

    /// A non-blocking connect, waited for on the descriptor loop up to `timeout` seconds, then
    /// blocking again.
    private func connect(to address: [UInt8], timeout: Double, what: String) throws(BluetoothError) {
        let flags = fcntl(fileDescriptor, F_GETFL)
        _ = fcntl(fileDescriptor, F_SETFL, flags | O_NONBLOCK)
        let rc = address.withUnsafeBytes {
            Glibc.connect(fileDescriptor, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))
        }
        if rc != 0 {
            guard errno == EINPROGRESS || errno == EAGAIN else { throw Self.error(errno: errno, doing: what) }
            var poller = [pollfd(fd: fileDescriptor, events: Int16(POLLOUT), revents: 0)]
            let ready = SocketWaiter.shared.block(&poller, timeoutMilliseconds: Int(max(0, timeout) * 1000))
            guard ready > 0 else { throw Self.error(errno: ETIMEDOUT, doing: what) }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fileDescriptor, SOL_SOCKET, SO_ERROR, &failure, &length)
            guard failure == 0 else { throw Self.error(errno: failure, doing: what) }
        }
        _ = fcntl(fileDescriptor, F_SETFL, flags)
    }

    /// Sends all of `bytes` (one packet on a packet socket).
    public func send(_ bytes: [UInt8]) throws(BluetoothError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fileDescriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Self.error(errno: errno, doing: "send")
            }
            offset += n
        }
    }

    /// Reads what is there, up to `maxCount` bytes, waiting up to `timeout` seconds (nil: as long
    /// as it takes). Returns [] at the end of the stream or when the time ran out first: ask
    /// ``isAtEnd`` which. One packet on a packet socket.
    public func receive(maxCount: Int = 65536, timeout: Double? = nil) throws(BluetoothError) -> [UInt8] {
        if let timeout {
            var poller = [pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)]
            if SocketWaiter.shared.block(&poller, timeoutMilliseconds: Int(max(0, timeout) * 1000)) == 0 { return [] }
        }
        var buffer = [UInt8](repeating: 0, count: max(1, maxCount))
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fileDescriptor, $0.baseAddress, $0.count, 0) }
            if n >= 0 {
                endOfStream.withLock { $0 = $0 || n == 0 }
                return Array(buffer[0..<n])
            }
            if errno == EINTR { continue }
            if errno == EAGAIN { return [] }
            throw Self.error(errno: errno, doing: "receive")
        }
    }

    private let endOfStream = Mutex(false)

    /// Whether a ``receive(maxCount:timeout:)`` saw the end of the stream.
    public var isAtEnd: Bool { endOfStream.withLock { $0 } }

    /// Shuts the socket down both ways (a blocked reader wakes with the end of the stream); the
    /// descriptor itself closes when the object goes.
    public func shutdown() {
        _ = Glibc.shutdown(fileDescriptor, Int32(SHUT_RDWR))
    }

    // MARK: Errors

    /// What the CLI prints when the kernel has no Bluetooth at all (EAFNOSUPPORT), after "no Bluetooth: ".
    public static let noKernelSupportMessage =
        "this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT); use --hci tcp:HOST:PORT or --hci serial:DEVICE"

    /// The ``BluetoothError`` for a failed call: no kernel support or no adapter → ``BluetoothError/noBluetooth(_:)``;
    /// adapter down or blocked → ``BluetoothError/notPowered(_:)``; refused, unreachable, timed out →
    /// ``BluetoothError/connectionFailed(_:)``; reset, broken or no longer connected (the device went
    /// away) → ``BluetoothError/disconnected(_:)``; anything else → ``BluetoothError/unknown(_:)``.
    public static func error(errno code: Int32, doing operation: String) -> BluetoothError {
        switch code {
        case EAFNOSUPPORT: return .noBluetooth(noKernelSupportMessage)
        case ENODEV: return .noBluetooth("no Bluetooth adapter")
        case ENETDOWN, EHOSTDOWN: return .notPowered("the Bluetooth adapter is down (\(operation): \(errnoName(code)))")
        case ERFKILL: return .notPowered("the Bluetooth adapter is blocked by rfkill (\(operation): ERFKILL)")
        case ECONNREFUSED: return .connectionFailed("\(operation): the device refused (ECONNREFUSED)")
        case EHOSTUNREACH: return .connectionFailed("\(operation): no answer from the device (EHOSTUNREACH)")
        case ETIMEDOUT: return .connectionFailed("\(operation): timed out (ETIMEDOUT)")
        case ECONNRESET, EPIPE, ENOTCONN: return .disconnected("\(operation) failed: \(errnoName(code))")
        default: return .unknown("\(operation) failed: \(errnoName(code))")
        }
    }

    /// "ENETDOWN" for the codes the mapping names, else the C library's text and the number.
    static func errnoName(_ code: Int32) -> String {
        let names: [Int32: String] = [
            EAFNOSUPPORT: "EAFNOSUPPORT", EINTR: "EINTR", ENODEV: "ENODEV", ENETDOWN: "ENETDOWN", EHOSTDOWN: "EHOSTDOWN",
            ERFKILL: "ERFKILL", ECONNREFUSED: "ECONNREFUSED", EHOSTUNREACH: "EHOSTUNREACH", ETIMEDOUT: "ETIMEDOUT",
        ]
        if let name = names[code] { return name }
        return String(cString: strerror(code)) + " (errno \(code))"
    }
}
#endif
import ModemRuntime
