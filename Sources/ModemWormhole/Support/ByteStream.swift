#if canImport(Glibc)
import Glibc
#endif
import ModemSockets
import Synchronization

/// One connected TCP socket for the wormhole's protocols (WebSocket, transit): reads of what is there
/// or of an exact count, writes of whole buffers, every wait through ModemSockets' ``SocketWaiter``
/// (no thread blocks), with an optional deadline. One reader and one writer at a time (a lock each).
/// The descriptor is closed when the stream goes, unless it was handed on with ``detach()``.
public final class ByteStream: Sendable {
    private let fdBox: Atomic<Int32>
    /// The peer's address (`127.0.0.1:4000`).
    public let peer: String
    private let readLock = WormholeLock()
    private let writeLock = WormholeLock()
    private let closed = Atomic<Bool>(false)

    /// A stream over a connected, non-blocking socket.
    public init(fd: Int32, peer: String) {
        fdBox = Atomic(fd)
        self.peer = peer
    }

    deinit {
        let fd = fdBox.load(ordering: .acquiring)
        if fd >= 0 { TCPSocket.close(fd) }
    }

    /// The descriptor (-1 once detached).
    public var fd: Int32 { fdBox.load(ordering: .acquiring) }

    /// Connects to `host:port` within `timeout` seconds, each resolved address in turn. The connection
    /// is made without blocking a thread (non-blocking `connect`, then a wait for the socket to become
    /// writable through ``SocketWaiter``), so a cancelled attempt (a transit route that lost the race,
    /// an address behind a NAT that never answers) ends at once.
    /// - Throws: ``WormholeError`` (`.network`) naming the address and the reason.
    public static func connect(host: String, port: Int, timeout: Double) async throws(WormholeError) -> ByteStream {
        let what = "cannot connect to \(TCPSocket.hostPort(host, port))"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw WormholeError(.network, "\(what): '\(host)' does not resolve")
        }
        defer { freeaddrinfo(list) }
        var addresses: [(family: Int32, address: [UInt8])] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let e = entry {
            entry = e.pointee.ai_next
            addresses.append((e.pointee.ai_family, Array(UnsafeRawBufferPointer(start: e.pointee.ai_addr, count: Int(e.pointee.ai_addrlen)))))
        }
        var failure = WormholeError(.network, "\(what): no address")
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        for (family, address) in addresses {
            let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { failure = WormholeError(.network, "\(what): socket: \(String(cString: strerror(errno)))"); continue }
            var code: Int32 = address.withUnsafeBytes { a in
                Glibc.connect(fd, a.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(a.count)) == 0 ? 0 : errno
            }
            if code == EINPROGRESS || code == EINTR {
                switch await SocketWaiter.shared.wait(fd: fd, for: .writable, timeoutMilliseconds: remaining(deadline)) {
                case .ready:
                    var soError: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
                    code = soError
                case .timedOut: code = ETIMEDOUT
                case .cancelled:
                    TCPSocket.close(fd)
                    throw WormholeError(.network, "\(what): cancelled")
                }
            }
            if code == 0 {
                TCPSocket.setNoDelay(fd)
                return ByteStream(fd: fd, peer: TCPSocket.hostPort(host, port))
            }
            TCPSocket.close(fd)
            failure = WormholeError(.network, "\(what): \(code == ECONNREFUSED ? "connection refused (nothing listens there)" : String(cString: strerror(code)))")
        }
        throw failure
    }

    /// Milliseconds left until `deadline` (nil: no limit).
    private static func remaining(_ deadline: ContinuousClock.Instant?) -> Int? {
        guard let deadline else { return nil }
        let left = deadline - .now
        return max(0, Int(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
    }

    /// Reads what is there (waiting for something): up to `maximum` bytes, or an empty array once the
    /// peer closed its end.
    /// - Throws: ``WormholeError`` (`.network`) on a failure, a reset, the deadline or cancellation.
    public func read(maximum: Int = 65_536, deadline: ContinuousClock.Instant? = nil) async throws(WormholeError) -> [UInt8] {
        await readLock.lock()
        defer { readLock.unlock() }
        var buffer = [UInt8](repeating: 0, count: maximum)
        while true {
            let fd = self.fd
            guard fd >= 0, !closed.load(ordering: .acquiring) else { throw WormholeError(.network, "the connection to \(peer) is closed") }
            let r = buffer.withUnsafeMutableBytes { TCPSocket.receive(fd, into: $0) }
            switch r {
            case .bytes(let n):
                buffer.removeLast(buffer.count - n)
                return buffer
            case .closed:
                return []
            case .failed(let code):
                throw WormholeError(.network, "reading from \(peer): \(code == ECONNRESET ? "the connection was reset" : String(cString: strerror(code)))")
            case .wouldBlock:
                switch await SocketWaiter.shared.wait(fd: fd, for: .readable, timeoutMilliseconds: Self.remaining(deadline)) {
                case .ready: continue
                case .timedOut: throw WormholeError(.network, "\(peer) sent nothing in time")
                case .cancelled: throw WormholeError(.network, "cancelled")
                }
            }
        }
    }

    /// Reads exactly `count` bytes.
    /// - Throws: ``WormholeError`` (`.network`) when the peer closes first, or as ``read(maximum:deadline:)``.
    public func read(exactly count: Int, deadline: ContinuousClock.Instant? = nil) async throws(WormholeError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            let part = try await read(maximum: min(count - out.count, 256 * 1024), deadline: deadline)
            if part.isEmpty { throw WormholeError(.network, "\(peer) closed the connection after \(out.count) of \(count) bytes") }
            out += part
        }
        return out
    }

    /// Writes all of `parts` in order.
    /// - Throws: ``WormholeError`` (`.network`) when the peer is gone, the deadline passes or the task is cancelled.
    public func write(_ parts: [UInt8]..., deadline: ContinuousClock.Instant? = nil) async throws(WormholeError) {
        await writeLock.lock()
        defer { writeLock.unlock() }
        for bytes in parts {
            var sent = 0
            while sent < bytes.count {
                let fd = self.fd
                guard fd >= 0, !closed.load(ordering: .acquiring) else { throw WormholeError(.network, "the connection to \(peer) is closed") }
                let r = bytes.withUnsafeBytes { TCPSocket.send(fd, UnsafeRawBufferPointer(rebasing: $0[sent...])) }
                switch r {
                case .success(let n) where n > 0:
                    sent += n
                case .success:
                    switch await SocketWaiter.shared.wait(fd: fd, for: .writable, timeoutMilliseconds: Self.remaining(deadline)) {
                    case .ready: continue
                    case .timedOut: throw WormholeError(.network, "\(peer) took nothing in time")
                    case .cancelled: throw WormholeError(.network, "cancelled")
                    }
                case .failure(let f):
                    throw WormholeError(.network, "writing to \(peer): \(f.code == EPIPE || f.code == ECONNRESET ? "the peer's end is gone" : String(cString: strerror(f.code)))")
                }
            }
        }
    }

    /// Ends the sending direction (FIN), keeping the receiving one.
    public func shutdownWrite() {
        let fd = self.fd
        if fd >= 0 { TCPSocket.shutdownWrite(fd) }
    }

    /// Closes both directions; pending reads and writes fail. The descriptor is closed when the
    /// stream goes.
    public func close() {
        if closed.exchange(true, ordering: .acquiringAndReleasing) { return }
        let fd = self.fd
        if fd >= 0 { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Hands the descriptor on (the caller closes it from now on); nil when already closed or detached.
    public func detach() -> Int32? {
        guard !closed.load(ordering: .acquiring) else { return nil }
        let fd = fdBox.exchange(-1, ordering: .acquiringAndReleasing)
        return fd >= 0 ? fd : nil
    }
}

/// A first-come-first-served lock for async code (waiters suspend, never block a thread).
final class WormholeLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    func lock() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                if !s.locked { s.locked = true; return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    func unlock() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { s in
            if s.waiters.isEmpty { s.locked = false; return nil }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}
