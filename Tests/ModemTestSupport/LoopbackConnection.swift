import Foundation
import ModemRuntime
#if canImport(Glibc)
import Glibc
#endif

/// A test client's TCP connection to 127.0.0.1 (the KISS and AGW test clients are on it):
/// non-blocking after connect, sends that wait for room, reads that do not wait.
public final class LoopbackConnection {
    private(set) var fd: Int32
    /// Whether the server closed the connection (or it failed).
    public private(set) var closedByServer = false

    /// Connects to 127.0.0.1:`port`; `receiveBufferBytes` shrinks the kernel's receive buffer
    /// (before connecting).
    public init(port: Int, receiveBufferBytes: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: errno \(errno)") }
        if let bytes = receiveBufferBytes {
            var value = Int32(bytes)
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestSupportError("connect to 127.0.0.1:\(port): errno \(code)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close() }

    /// Sends all of `bytes`; when the kernel's buffer is full, waits for room (the socket becoming
    /// writable: poll(2)); 60 s without room is a hang guard and throws.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        let deadline = Date().addingTimeInterval(60)
        while offset < bytes.count {
            guard fd >= 0 else { throw TestSupportError("send on a closed connection") }
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { offset += n; continue }
            if n < 0, errno == EINTR { continue }
            if n < 0, errno == EAGAIN {
                let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&p, 1, left)
                if ready > 0 || (ready < 0 && errno == EINTR) { continue }
                throw TestSupportError("send: no room in the socket's buffer within 60 s (a hang guard), \(offset) of \(bytes.count) bytes sent")
            }
            throw TestSupportError("send: errno \(errno)")
        }
    }

    /// What has arrived, without waiting (empty when nothing has).
    public func read() -> [UInt8] {
        guard fd >= 0 else { return [] }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received += buffer[0..<n]
                continue
            }
            if n == 0 { closedByServer = true }
            if n < 0, errno != EAGAIN, errno != EINTR { closedByServer = true }
            return received
        }
    }

    /// Waits on the event loop, up to `seconds`, for the socket to become readable.
    public func awaitReadable(seconds: Double) async {
        guard fd >= 0 else { return }
        _ = await SocketWaiter.shared.wait(fd: fd, for: .readable, timeoutMilliseconds: Int(max(0, seconds) * 1000) + 1)
    }

    /// Closes the connection; `reset` makes it abortive (RST, as a crashed client).
    public func close(reset: Bool = false) {
        guard fd >= 0 else { return }
        if reset {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        Glibc.close(fd)
        fd = -1
    }
}

/// A test client that reads what has arrived when asked (``KISSTestClient``, ``AGWTestClient``): what
/// a test's pump calls between a server's polls.
public protocol ReceivingTestClient: AnyObject {
    /// Reads what has arrived, without waiting; returns the number of bytes.
    @discardableResult func receive() -> Int
}

extension KISSTestClient: ReceivingTestClient {}
extension AGWTestClient: ReceivingTestClient {}
