#if canImport(Glibc)
import Glibc
#endif
import ModemSockets
import ModemTransport
import Synchronization

/// A listening TCP socket that hands out ``TCPTransport``s. A connection counts only once it sent
/// the `SMsg` preamble (HTTP and port scans are dropped at once), and an address that opens more
/// than `rateLimit` connections within `rateWindow` seconds gets a NOPE (`FAIL_EXCEEDED_RATE_LIMIT`)
/// before any cryptography is done for it.
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
            throw TransportError(error.description)
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

    /// The next connection that starts like a session.
    /// - Throws: ``TransportError`` once the listener is closed, or when accepting fails for good.
    public func accept() async throws(TransportError) -> TCPTransport {
        while true {
            if closed.load(ordering: .acquiring) { throw TransportError("the listener on \(TCPSocket.hostPort(host, port)) is closed") }
            switch TCPSocket.accept(fd) {
            case .none:
                if await SocketWaiter.shared.wait(fd: fd, for: .readable) == .cancelled {
                    throw TransportError("accepting on \(TCPSocket.hostPort(host, port)) was cancelled")
                }
            case .failed(let code):
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    throw TransportError("accept on \(TCPSocket.hostPort(host, port)): \(String(cString: strerror(code)))")
                }
                if closed.load(ordering: .acquiring) || code == EINVAL || code == EBADF {
                    throw TransportError("the listener on \(TCPSocket.hostPort(host, port)) is closed")
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
                if await Self.readPreamble(client) {
                    return TCPTransport(fd: client, peerAddress: peer, expectPreamble: false)
                }
                TCPSocket.close(client)
            }
        }
    }

    /// Reads the 4-byte `SMsg` preamble within 5 s; false for anything else.
    private static func readPreamble(_ fd: Int32) async -> Bool {
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4)
        while got.count < 4 {
            let want = 4 - got.count
            let result = buffer.withUnsafeMutableBytes { TCPSocket.receive(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            switch result {
            case .bytes(let n): got += buffer[0..<n]
            case .wouldBlock:
                if await SocketWaiter.shared.wait(fd: fd, for: .readable, timeoutMilliseconds: 5000) != .ready { return false }
            case .closed, .failed: return false
            }
            if !SessionWire.preamble.starts(with: got) { return false }
        }
        return true
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
