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

        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, list != nil else {
            throw failure("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }

        var lastError = failure("no address")
        var entry = list
        while let ai = entry {
            entry = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                            | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else {
                lastError = failure("socket: \(String(cString: strerror(errno)))")
                continue
            }
            var code: Int32 = 0
            if connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) != 0 {
                code = errno
                if code == EINPROGRESS {
                    var p = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
                    if SocketWaiter.shared.block(&p, timeoutMilliseconds: Int(timeout * 1000)) == 0 {
                        code = ETIMEDOUT
                    } else {
                        var length = socklen_t(MemoryLayout<Int32>.size)
                        _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
                    }
                }
            }
            guard code == 0 else {
                Glibc.close(fd)
                switch code {
                case ECONNREFUSED: lastError = failure("connection refused")
                case ETIMEDOUT: lastError = failure("no answer in \(Int(timeout)) s")
                default: lastError = failure(String(cString: strerror(code)).lowercased())
                }
                continue
            }
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            channel = H4StreamChannel(fd: fd, isSocket: true, name: name)
            return
        }
        throw lastError
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
