#if canImport(Glibc)
import Glibc
#endif
import ModemSockets
import ModemTransport
import Synchronization
import ModemRuntime

/// A listening TCP socket that hands out ``TCPTransport``s at once: the transport checks the `SMsg`
/// preamble (HTTP, a port scan or junk ends it as `.malformed` or `.peerClosed` before any
/// cryptography), so one silent connection never holds the next `accept()`. An address that opens
/// more than `rateLimit` connections within `rateWindow` seconds gets a NOPE
/// (`FAIL_EXCEEDED_RATE_LIMIT`) instead.
public final class TCPListener: Sendable {
    private struct State {
        var recent: [String: [Double]] = [:]
    }

    private let fd: Int32
    private let closed = Atomic<Bool>(false)
    private let state = Mutex(State())
    private let rateLimit: Int
    private let rateWindow: Double
    private let origin = ContinuousClock.now
    /// The port listened on (the kernel's choice when 0 was asked).
    public let port: Int
    /// The host given.
    public let host: String

    /// Listens on `host:port` (port 0: any free port, see ``port``).
    /// - Throws: ``TransportError`` naming the address and the reason (in use, not ours, denied).
    public init(host: String, port: Int, rateLimit: Int = 10, rateWindow: Double = 60) throws(TransportError) {
        do {
            let (fd, bound) = try TCPSocket.listen(host: host, port: port)
            self.fd = fd
            self.port = bound
        } catch {
            throw TransportError(error)
        }
        self.host = host
        self.rateLimit = rateLimit
        self.rateWindow = rateWindow
    }

    deinit { TCPSocket.close(fd) }

    private var now: Double {
        let d = ContinuousClock.now - origin
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }

    /// The next connection (within the rate limit), whose transport expects the `SMsg` preamble.
    /// - Throws: ``TransportError`` once the listener is closed, or when accepting fails for good.
    public func accept() async throws(TransportError) -> TCPTransport {
        while true {
            if closed.load(ordering: .acquiring) { throw .closed("the listener on \(TCPSocket.hostPort(host, port))") }
            switch TCPSocket.accept(fd) {
            case .none:
                if await SocketWaiter.shared.wait(fd: fd, for: .readable) == .cancelled {
                    throw .cancelled("accepting on \(TCPSocket.hostPort(host, port))")
                }
            case .failed(let code):
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    throw .io(code: code, "accept on \(TCPSocket.hostPort(host, port)): \(String(cString: strerror(code)))")
                }
                if closed.load(ordering: .acquiring) || code == EINVAL || code == EBADF {
                    throw .closed("the listener on \(TCPSocket.hostPort(host, port))")
                }
            case .connection(let client, let peer):
                let address = TCPSocket.hostOf(peer)
                let t = now
                let allowed: Bool = state.withLock { s in
                    var times = s.recent[address, default: []].filter { t - $0 < rateWindow }
                    times.append(t)
                    s.recent[address] = times
                    if s.recent.count > 4096 { s.recent = s.recent.filter { !$0.value.isEmpty && t - $0.value.last! < rateWindow } }
                    return times.count <= rateLimit
                }
                if !allowed {
                    Self.refuse(client)
                    continue
                }
                return TCPTransport(fd: client, peerAddress: peer, expectPreamble: true)
            }
        }
    }

    /// Answers NOPE(4) and closes, after reading what the dialer sent (so the close is not a reset
    /// that could destroy the NOPE on its way).
    private static func refuse(_ fd: Int32) {
        Task.detached {
            _ = await SocketWaiter.shared.wait(fd: fd, for: .readable, timeoutMilliseconds: 1000)
            var sink = [UInt8](repeating: 0, count: 4096)
            _ = sink.withUnsafeMutableBytes { TCPSocket.receive(fd, into: $0) }
            let nope = SessionFrameDecoder.encode(SessionWire.nope(SessionFailure.exceededRateLimit.code, "too many attempts, try again later"))
            _ = nope.withUnsafeBytes { TCPSocket.send(fd, $0) }
            TCPSocket.shutdownWrite(fd)
            while await SocketWaiter.shared.wait(fd: fd, for: .readable, timeoutMilliseconds: 2000) == .ready {
                if case .bytes = sink.withUnsafeMutableBytes({ TCPSocket.receive(fd, into: $0) }) { continue }
                break
            }
            TCPSocket.close(fd)
        }
    }

    /// Stops listening; a pending ``accept()`` throws.
    public func close() {
        if closed.exchange(true, ordering: .acquiringAndReleasing) { return }
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }
}
