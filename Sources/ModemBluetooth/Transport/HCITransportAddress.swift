/// Where the controller is, as given to `--hci`: `tcp:HOST:PORT`, `serial:/dev/ttyUSB0[,BAUD]` or `hciN`.
public enum HCITransportAddress: Sendable, Hashable, CustomStringConvertible {
    /// H4 over TCP.
    case tcp(host: String, port: UInt16)
    /// H4 over a serial port at a fixed rate.
    case serial(path: String, baud: Int)
    /// The kernel's HCI user channel on hci`index`.
    case userChannel(index: Int)

    /// The default serial rate.
    public static let defaultBaud = 115_200

    /// Parses a specification.
    /// - Throws: ``BluetoothError/invalidArgument(_:)`` saying what is wrong and what is expected.
    public init(parsing spec: String) throws(BluetoothError) {
        let usage = "use tcp:HOST:PORT, serial:DEVICE[,BAUD] or hciN"
        if spec.hasPrefix("tcp:") {
            let rest = spec.dropFirst(4)
            guard let colon = rest.lastIndex(of: ":") else {
                throw .invalidArgument("bad --hci '\(spec)': no port (tcp:HOST:PORT)")
            }
            var host = String(rest[..<colon])
            let portText = rest[rest.index(after: colon)...]
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw .invalidArgument("bad --hci '\(spec)': no host (tcp:HOST:PORT)") }
            guard let port = UInt16(portText), port > 0 else {
                throw .invalidArgument("bad --hci '\(spec)': '\(portText)' is not a port (1-65535)")
            }
            self = .tcp(host: host, port: port)
        } else if spec.hasPrefix("serial:") {
            let rest = spec.dropFirst(7)
            let parts = rest.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
            let path = String(parts[0])
            guard !path.isEmpty else { throw .invalidArgument("bad --hci '\(spec)': no device (serial:DEVICE[,BAUD])") }
            var baud = Self.defaultBaud
            if parts.count == 2 {
                guard let value = Int(parts[1]), H4SerialTransport.speeds[value] != nil else {
                    throw .invalidArgument("bad --hci '\(spec)': '\(parts[1])' is not a supported rate (\(H4SerialTransport.speeds.keys.sorted().map(String.init).joined(separator: ", ")))")
                }
                baud = value
            }
            self = .serial(path: path, baud: baud)
        } else if spec.hasPrefix("hci") {
            let digits = spec.dropFirst(3)
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let index = Int(digits), index >= 0, index < 65535 else {
                throw .invalidArgument("bad --hci '\(spec)': expected hciN with N a number (hci0)")
            }
            self = .userChannel(index: index)
        } else {
            throw .invalidArgument("bad --hci '\(spec)': \(usage)")
        }
    }

    /// `tcp:127.0.0.1:5000`, `tcp:[::1]:5000`, `serial:/dev/ttyUSB0,115200`, `hci0`.
    public var description: String {
        switch self {
        case let .tcp(host, port): return "tcp:\(host.contains(":") ? "[\(host)]" : host):\(port)"
        case let .serial(path, baud): return "serial:\(path),\(baud)"
        case let .userChannel(index): return "hci\(index)"
        }
    }

    /// Opens the transport; with `capture`, every packet both ways is also written there.
    public func open(capture: PcapWriter? = nil) throws(BluetoothError) -> any HCITransport {
        let transport: any HCITransport
        switch self {
        case let .tcp(host, port): transport = try H4TCPTransport(host: host, port: port)
        case let .serial(path, baud): transport = try H4SerialTransport(path: path, baud: baud)
        case let .userChannel(index): transport = try HCIUserChannelTransport(index: index)
        }
        guard let capture else { return transport }
        return CapturingHCITransport(transport, writer: capture)
    }
}
