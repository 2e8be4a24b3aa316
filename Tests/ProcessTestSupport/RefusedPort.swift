#if canImport(Glibc)
import Glibc
#endif

/// A TCP port on 127.0.0.1 where connections are refused, reliably: a socket bound to it that never
/// listens. (Closing a listener to get a "closed port" races with tests running alongside, whose
/// own port-0 listeners may be given that port before the connection is tried.)
public final class RefusedPort: Sendable {
    /// The port.
    public let port: Int
    private let fd: Int32

    /// Binds a socket to a free port of the kernel's choice, without listening.
    public init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(fd >= 0, "RefusedPort: socket failed (errno \(errno))")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        precondition(ok, "RefusedPort: bind failed (errno \(errno))")
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
