#if canImport(Glibc)
import Glibc
#endif

/// The kernel's Bluetooth (BlueZ sockets): what this machine's kernel offers.
public enum BlueZ {
    /// `AF_BLUETOOTH`.
    public static let addressFamily: Int32 = 31
    /// `BTPROTO_HCI`.
    public static let protocolHCI: Int32 = 1

    /// Checks that the kernel has Bluetooth and an adapter: opens (and closes) a raw HCI socket.
    /// - Throws: ``BluetoothError/noBluetooth(_:)`` naming the problem (no Bluetooth in this kernel,
    ///   no adapter), ``BluetoothError/notPowered(_:)`` when the adapter is down or blocked.
    public static func probe() throws(BluetoothError) {
        let fd = socket(addressFamily, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), protocolHCI)
        guard fd >= 0 else { throw error(errno, "socket(AF_BLUETOOTH)") }
        Glibc.close(fd)
    }

    /// The error for `code` from `call`, in words a user can act on.
    public static func error(_ code: Int32, _ call: String) -> BluetoothError {
        switch code {
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            return .noBluetooth("this kernel has no Bluetooth support (\(call) failed: EAFNOSUPPORT); use --hci tcp:HOST:PORT or --hci serial:DEVICE")
        case ENODEV:
            return .noBluetooth("no Bluetooth adapter (\(call) failed: ENODEV)")
        case ENETDOWN, EHOSTDOWN, ERFKILL:
            return .notPowered("the Bluetooth adapter is down or blocked (\(call) failed: \(String(cString: strerror(code))))")
        case ECONNREFUSED, EHOSTUNREACH, ETIMEDOUT:
            return .connectionFailed("\(call) failed: \(String(cString: strerror(code)))")
        case EPERM, EACCES:
            return .noBluetooth("not allowed to use Bluetooth (\(call) failed: \(String(cString: strerror(code))))")
        default:
            return .unknown("\(call) failed: \(String(cString: strerror(code)))")
        }
    }
}
