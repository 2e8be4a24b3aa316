/// Why a Bluetooth operation failed, in words a user can act on. Each case maps to one of the
/// the Communication API's return codes for `open` (see ``seedOpenCode``).
public enum BluetoothError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No Bluetooth at all: the kernel has none, no adapter, no controller at the given transport (open code -4).
    case noBluetooth(String)
    /// An adapter exists but is down or blocked (open code -5).
    case notPowered(String)
    /// The address is not a Bluetooth address (open code -1).
    case illegalAddress(String)
    /// The device could not be reached or refused (page timeout, no Serial Port service, RFCOMM refused) (open code -2).
    case connectionFailed(String)
    /// The link went away: the device disconnected, the channel closed, the link was lost.
    case disconnected(String)
    /// The transport to the controller failed or closed.
    case transportClosed(String)
    /// A bad option or specification (`--hci` syntax and such).
    case invalidArgument(String)
    /// Anything else (open code -6).
    case unknown(String)

    /// The Communication API's return code for `open(identifier:)` failing this way.
    public var seedOpenCode: Int32 {
        switch self {
        case .illegalAddress, .invalidArgument: return -1
        case .connectionFailed, .disconnected: return -2
        case .noBluetooth, .transportClosed: return -4
        case .notPowered: return -5
        case .unknown: return -6
        }
    }

    public var description: String {
        switch self {
        case .noBluetooth(let m): return "no Bluetooth: \(m)"
        case .notPowered(let m): return "Bluetooth is not powered: \(m)"
        case .illegalAddress(let m): return "not a Bluetooth address: \(m)"
        case .connectionFailed(let m): return "connection failed: \(m)"
        case .disconnected(let m): return "disconnected: \(m)"
        case .transportClosed(let m): return Self.transportClosedWords(m)
        case .invalidArgument(let m): return m
        case .unknown(let m): return m
        }
    }

    /// "the controller transport closed: `reason`", said once when `reason` already says it.
    public static func transportClosedWords(_ reason: String) -> String {
        let prefix = "the controller transport closed"
        return reason.hasPrefix(prefix) ? reason : "\(prefix): \(reason)"
    }
}
