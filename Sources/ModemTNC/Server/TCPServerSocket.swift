#if canImport(Glibc)
import Glibc
#endif
import ModemSockets

/// The socket calls a ``KISSServer`` and an ``AGWServer`` make: ModemSockets' ``TCPSocket`` (POSIX TCP wrapped once),
/// with failures phrased as ``KISSServerError``.
enum TCPServerSocket {
    typealias Accepted = TCPSocket.Accepted
    typealias Received = TCPSocket.Received
    typealias SocketFailure = TCPSocket.SocketFailure

    /// A listening TCP socket on `host:port` (non-blocking, close-on-exec, `SO_REUSEADDR`), and the
    /// port it got (the one asked for, or the kernel's choice for 0).
    static func listen(host: String, port: Int, backlog: Int32 = 16) throws(KISSServerError) -> (fd: Int32, port: Int) {
        try TCPSocket.listen(host: host, port: port, backlog: backlog)
    }

    static func accept(_ listener: Int32) -> Accepted { TCPSocket.accept(listener) }

    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Received {
        TCPSocket.receive(fd, into: buffer)
    }

    /// Sends what the socket takes now: the count sent (maybe 0), or the `errno` of a failure.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, SocketFailure> {
        TCPSocket.send(fd, bytes)
    }

    static func close(_ fd: Int32) { TCPSocket.close(fd) }

    /// Sets the kernel's send buffer of a socket (bytes; the kernel doubles and clamps it).
    static func setSendBuffer(_ fd: Int32, bytes: Int) { TCPSocket.setSendBuffer(fd, bytes: bytes) }
}
