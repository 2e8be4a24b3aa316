#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime
import ModemSockets
import Synchronization

/// One connected TCP socket for the wormhole's protocols (WebSocket, transit): reads of what is there
/// or of an exact count, writes of whole buffers, every wait through the runtime's ``SocketWaiter``
/// (no thread blocks), with an optional deadline. One reader and one writer at a time (a lock each).
/// The descriptor is closed when the stream goes, unless it was handed on with ``detach()``.
public final class ByteStream: Sendable {
    private let fdBox: Atomic<Int32>
    /// The peer's address (`127.0.0.1:4000`).
    public let peer: String
    private let readLock = AsyncLock()
    private let writeLock = AsyncLock()
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

    /// Connects to `host:port` within `timeout` seconds, each resolved address in turn, through
    /// ModemSockets' one TCP connect (``TCPSocket/connect(host:port:deadline:)``, async): no
    /// thread blocks, so a cancelled attempt (a transit route that lost the race, an address behind a
    /// NAT that never answers) ends at once.
    /// - Throws: ``WormholeError`` (`.network`) naming the address and the reason.
    public static func connect(host: String, port: Int, deadline: Deadline) async throws(WormholeError) -> ByteStream {
        do throws(SocketError) {
            let connected = try await TCPSocket.connect(host: host, port: port, deadline: deadline)
            return ByteStream(fd: connected.fd, peer: TCPSocket.hostPort(host, port))
        } catch {
            throw WormholeError(.network, error.description)
        }
    }

    /// Reads what is there (waiting for something): up to `maximum` bytes, or an empty array once the
    /// peer closed its end.
    /// - Throws: ``WormholeError`` (`.network`) on a failure, a reset, the deadline or cancellation.
    public func read(maximum: Int = 65_536, deadline: Deadline? = nil) async throws(WormholeError) -> [UInt8] {
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
                switch await SocketWaiter.shared.wait(fd: fd, for: .readable, until: deadline) {
                case .ready: continue
                case .timedOut: throw WormholeError(.network, "\(peer) sent nothing in time")
                case .cancelled: throw WormholeError(.network, "cancelled")
                }
            }
        }
    }

    /// Reads exactly `count` bytes.
    /// - Throws: ``WormholeError`` (`.network`) when the peer closes first, or as ``read(maximum:deadline:)``.
    public func read(exactly count: Int, deadline: Deadline? = nil) async throws(WormholeError) -> [UInt8] {
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
    public func write(_ parts: [UInt8]..., deadline: Deadline? = nil) async throws(WormholeError) {
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
                    switch await SocketWaiter.shared.wait(fd: fd, for: .writable, until: deadline) {
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

