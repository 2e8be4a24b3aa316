#if canImport(Glibc)
import Glibc
import ModemSockets
#endif

/// H4 over a TCP connection (`--hci tcp:HOST:PORT`): a controller such as Bumble's, exposed as raw
/// H4 bytes. Connects within 3 s, sets `TCP_NODELAY`, reads without blocking.
public final class H4TCPTransport: HCITransport {
    private let channel: H4StreamChannel
    /// The host as given.
    public let host: String
    /// The port.
    public let port: UInt16

    /// Connects to `host:port` within `timeout` seconds.
    /// - Throws: ``BluetoothError/noBluetooth(_:)`` ("no controller at tcp:HOST:PORT: connection refused").
    public init(host: String, port: UInt16, timeout: Double = 3) throws(BluetoothError) {
        self.host = host
        self.port = port
        let name = HCITransportAddress.tcp(host: host, port: port).description
        func failure(_ why: String) -> BluetoothError { .noBluetooth("no controller at \(name): \(why)") }

        // ModemSockets' one TCP connect (each address in turn, non-blocking, TCP_NODELAY).
        let fd: Int32
        do throws(SocketError) {
            fd = try TCPSocket.connect(host: host, port: Int(port), timeoutMilliseconds: Int(timeout * 1000)).fd
        } catch {
            switch error.kind {
            case .refused: throw failure("connection refused")
            case .timedOut: throw failure("no answer in \(Int(timeout)) s")
            case .invalidAddress where error.operation == "getaddrinfo": throw failure("cannot resolve \(host)")
            default: throw failure(error.code != 0 ? String(cString: strerror(error.code)).lowercased() : error.description)
            }
        }
        channel = H4StreamChannel(fd: fd, isSocket: true, name: name)
    }

    /// The socket.
    public var fileDescriptor: Int32 { channel.fileDescriptor }
    /// Sends one packet with its H4 indicator.
    public func send(_ packet: HCIPacket) throws(BluetoothError) { try channel.send(packet) }
    /// The whole packets that arrived.
    public func receive() throws(BluetoothError) -> [HCIPacket] { try channel.receive() }
    /// Closes the connection.
    public func close() { channel.close() }
}
