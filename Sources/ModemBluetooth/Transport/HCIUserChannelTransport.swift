#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ModemSockets
import ModemRuntime

/// The Linux kernel's HCI user channel (`--hci hciN`): exclusive, raw use of a controller the kernel
/// knows, `socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)` bound to `{dev N, HCI_CHANNEL_USER}`. Each
/// read and write is one packet with its H4 indicator. Needs CAP_NET_ADMIN and the device down.
public final class HCIUserChannelTransport: HCITransport {
    /// `AF_BLUETOOTH`.
    public static let addressFamily: Int32 = 31
    /// `BTPROTO_HCI`.
    public static let hciProtocol: Int32 = 1
    /// `HCI_CHANNEL_USER`.
    public static let userChannel: UInt16 = 1

    private let state: Mutex<Int32>
    /// The controller index (N of hciN).
    public let index: Int
    /// Datagrams that did not hold one well-formed packet (dropped).
    public var malformedPackets: Int { dropped.withLock { $0 } }
    private let dropped = Mutex(0)

    /// Opens hci`index`'s user channel.
    /// - Throws: ``BluetoothError/noBluetooth(_:)`` naming the cause: "this kernel has no Bluetooth
    ///   support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT)", no such adapter, no permission, or in use.
    public init(index: Int) throws(BluetoothError) {
        self.index = index
        let name = "hci\(index)"
        let fd = socket(Self.addressFamily, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Self.hciProtocol)
        guard fd >= 0 else {
            let code = errno
            if code == EAFNOSUPPORT {
                throw .noBluetooth("this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed: EAFNOSUPPORT)")
            }
            throw .noBluetooth("cannot open an HCI socket for \(name): socket(AF_BLUETOOTH) failed: \(String(cString: strerror(code)))")
        }
        // struct sockaddr_hci { sa_family_t hci_family; unsigned short hci_dev; unsigned short hci_channel; }
        var address: [UInt8] = []
        address.appendLE(UInt16(Self.addressFamily))
        address.appendLE(UInt16(truncatingIfNeeded: index))
        address.appendLE(Self.userChannel)
        let bound = address.withUnsafeBytes { raw in
            bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            switch code {
            case ENODEV: throw .noBluetooth("no Bluetooth adapter \(name)")
            case EPERM, EACCES: throw .noBluetooth("the HCI user channel on \(name) needs CAP_NET_ADMIN (run as root)")
            case EBUSY, EALREADY: throw .noBluetooth("\(name) is in use: the user channel needs it down and unused (hciconfig \(name) down)")
            case ERFKILL: throw .notPowered("\(name) is blocked by rfkill")
            default: throw .noBluetooth("cannot bind to \(name): \(String(cString: strerror(code)))")
            }
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        state = Mutex(fd)
    }

    deinit { close() }

    /// The socket.
    public var fileDescriptor: Int32 { state.withLock { $0 } }

    /// Writes one packet (indicator + packet) in one datagram.
    public func send(_ packet: HCIPacket) throws(BluetoothError) {
        let bytes = packet.h4
        let failure: BluetoothError? = state.withLock { fd in
            guard fd >= 0 else { return .transportClosed("hci\(index) is closed") }
            while true {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n == bytes.count { return nil }
                if n < 0, errno == EINTR { continue }
                if n < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                    var p = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
                    SocketWaiter.shared.block(&p, timeoutMilliseconds: 1000)
                    continue
                }
                return .transportClosed("cannot write to hci\(index): \(n < 0 ? String(cString: strerror(errno)) : "short write")")
            }
        }
        if let failure { throw failure }
    }

    /// Reads every datagram waiting (at most 64 per call).
    public func receive() throws(BluetoothError) -> [HCIPacket] {
        let result: Result<[HCIPacket], BluetoothError> = state.withLock { fd in
            guard fd >= 0 else { return .failure(.transportClosed("hci\(index) is closed")) }
            var packets: [HCIPacket] = []
            var buffer = [UInt8](repeating: 0, count: 65540)
            for _ in 0..<64 {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n > 0 {
                    if let packet = try? HCIPacket(h4: Array(buffer[0..<n])) {
                        packets.append(packet)
                    } else {
                        dropped.withLock { $0 += 1 }
                    }
                    continue
                }
                if n == 0 { return packets.isEmpty ? .failure(.transportClosed("hci\(index) went away")) : .success(packets) }
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return .failure(.transportClosed("cannot read from hci\(index): \(String(cString: strerror(errno)))"))
            }
            return .success(packets)
        }
        return try result.get()
    }

    /// Closes the socket (the kernel gives the controller back).
    public func close() {
        state.withLock { fd in
            if fd >= 0 { _ = Glibc.close(fd) }
            fd = -1
        }
    }
}
