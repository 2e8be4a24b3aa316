#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ModemRuntime

/// Writes HCI traffic to a pcap file that Wireshark and tshark read
/// (LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR, 201): a 24-byte global header, then per packet a record
/// header, a 4-byte big-endian direction (0 host → controller, 1 controller → host), the H4
/// indicator and the packet. Each record is written with one `write(2)`, so the file is complete up
/// to the last packet even if the process dies. Safe to use from any thread.
public final class PcapWriter: Sendable {
    /// The pcap link type for H4 with a direction header.
    public static let linkType: UInt32 = 201

    private let state: Mutex<Int32?>
    /// The file's path.
    public let path: String

    /// Creates (or truncates) the file at `path` and writes the global header.
    /// - Throws: `BluetoothError.invalidArgument` naming the file and the system's reason.
    public init(path: String) throws(BluetoothError) {
        self.path = path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw .invalidArgument("cannot write the capture \(path): \(String(cString: strerror(errno)))")
        }
        var header: [UInt8] = []
        header.appendLE(UInt32(0xA1B2_C3D4))
        header.appendLE(UInt16(2))
        header.appendLE(UInt16(4))
        header.appendLE(UInt32(0))  // thiszone
        header.appendLE(UInt32(0))  // sigfigs
        header.appendLE(UInt32(65535))  // snaplen
        header.appendLE(Self.linkType)
        guard Self.writeAll(fd, header) else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .invalidArgument("cannot write the capture \(path): \(message)")
        }
        state = Mutex(fd)
    }

    deinit { close() }

    /// Appends one packet; `sent` is true for host → controller. `time` is seconds since 1970
    /// (the wall clock when nil). A failing write is ignored: the capture is a diagnostic.
    public func record(_ packet: HCIPacket, sent: Bool, time: Double? = nil) {
        let when = time ?? Self.now()
        let seconds = max(0, when.rounded(.down))
        let h4 = packet.h4
        let length = UInt32(4 + h4.count)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + h4.count)
        bytes.appendLE(UInt32(min(seconds, Double(UInt32.max))))
        bytes.appendLE(UInt32(min(999_999, max(0, (when - seconds) * 1_000_000))))
        bytes.appendLE(min(length, 65535))
        bytes.appendLE(length)
        bytes.appendBE(UInt32(sent ? 0 : 1))
        bytes.append(contentsOf: h4.prefix(65535 - 4))
        state.withLock { fd in
            guard let fd else { return }
            _ = Self.writeAll(fd, bytes)
        }
    }

    /// Closes the file; later records are dropped.
    public func close() {
        state.withLock { fd in
            if let open = fd { _ = Glibc.close(open) }
            fd = nil
        }
    }

    private static func now() -> Double { Double(SystemTime.wallNanoseconds()) / 1e9 }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }
}
