#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import ModemSockets
import ModemTransport
import Synchronization
import ModemRuntime

/// One TCP connection under a session: its descriptor, its frame decoder, how it ended. The
/// descriptor is closed when the last reference goes (so a waiting poll never sees a reused number).
final class TCPConnection: Sendable {
    struct State {
        var decoder: SessionFrameDecoder
        var ended: TransportEnd?
        /// A frame handed back by the session: the next frame is decoded into its storage.
        var spare: [UInt8]?
    }

    let fd: Int32
    let peerAddress: String
    let state: Mutex<State>
    let closed = Atomic<Bool>(false)
    let writeLock = AsyncLock()

    init(fd: Int32, peerAddress: String, expectPreamble: Bool) {
        self.fd = fd
        self.peerAddress = peerAddress
        state = Mutex(State(decoder: SessionFrameDecoder(expectPreamble: expectPreamble)))
    }

    deinit { TCPSocket.close(fd) }
}

extension TransportError {
    /// The transport's error for a failed socket call, by its kind; the words are the socket error's
    /// (the address, the call, the reason).
    init(_ error: SocketError) {
        switch error.kind {
        case .refused: self = .connectionRefused(error.description)
        case .timedOut: self = .timedOut(error.description)
        case .cancelled: self = .cancelled(error.description)
        case .invalidAddress: self = .invalidAddress(error.description)
        case .addressInUse: self = .addressInUse(error.description)
        case .permissionDenied: self = .permissionDenied(error.description)
        case .systemCallFailed: self = .io(code: error.code, error.description)
        }
    }
}

/// A ``MessageTransport`` over one TCP connection: frames as `length u32 BE | frame`, the dialer's
/// `SMsg` preamble first. Non-blocking sockets; waits go through the runtime's ``SocketWaiter``, so
/// no Swift thread ever blocks. Reads happen only inside ``receive()`` (pull-based), so a peer that
/// sends faster than we consume fills the kernel's buffers, not our memory.
public struct TCPTransport: MessageTransport {
    let connection: TCPConnection

    /// Always `.stream`.
    public var kind: TransportKind { .stream }
    /// 65,560 bytes.
    public var maximumFrameSize: Int { SessionWire.maximumFrameLength }
    /// The peer's address, `127.0.0.1:5000` or `[::1]:5000`.
    public var peerAddress: String { connection.peerAddress }

    init(fd: Int32, peerAddress: String, expectPreamble: Bool) {
        connection = TCPConnection(fd: fd, peerAddress: peerAddress, expectPreamble: expectPreamble)
    }

    /// A transport over a TCP connection made elsewhere (non-blocking, e.g. a wormhole's transit
    /// connection after its handshake), whose ends both know the line is a session: no preamble is
    /// written or expected. The transport owns the descriptor from now on.
    public static func adopting(fd: Int32, peerAddress: String) -> TCPTransport {
        TCPTransport(fd: fd, peerAddress: peerAddress, expectPreamble: false)
    }

    /// Connects to `host:port` (a name, an IPv4 or IPv6 literal) and writes the `SMsg` preamble.
    /// - Throws: ``TransportError`` naming the address and the reason (refused, unreachable, timed out).
    public static func dial(host: String, port: Int, timeout: Double = 10) async throws(TransportError) -> TCPTransport {
        let result: Result<(fd: Int32, peer: String), SocketError>
        do throws(SocketError) {
            result = .success(try await TCPSocket.connect(host: host, port: port, timeoutMilliseconds: Int(timeout * 1000)))
        } catch {
            result = .failure(error)
        }
        switch result {
        case .failure(let error):
            throw TransportError(error)
        case .success(let (fd, peer)):
            let transport = TCPTransport(fd: fd, peerAddress: peer, expectPreamble: false)
            try await transport.write(SessionWire.preamble, [])
            return transport
        }
    }

    public func send(_ frame: [UInt8]) async throws(TransportError) {
        guard !frame.isEmpty, frame.count <= maximumFrameSize else {
            throw frame.isEmpty ? .emptyFrame : .frameTooLarge(size: frame.count, maximum: maximumFrameSize)
        }
        try await write(SessionFrameDecoder.lengthPrefix(frame.count), frame)
    }

    /// Writes `header` then `body`, whole, waiting for room as needed.
    func write(_ header: [UInt8], _ body: [UInt8]) async throws(TransportError) {
        let c = connection
        await c.writeLock.lock()
        defer { c.writeLock.unlock() }
        var sent = 0
        let total = header.count + body.count
        while sent < total {
            if c.closed.load(ordering: .acquiring) { throw .closed("the connection") }
            let result: Result<Int, TCPSocket.SocketFailure> = header.withUnsafeBytes { h in
                body.withUnsafeBytes { b in
                    let hs = min(sent, h.count)
                    let bs = max(0, sent - h.count)
                    return TCPSocket.send(c.fd, parts: [UnsafeRawBufferPointer(rebasing: h[hs...]), UnsafeRawBufferPointer(rebasing: b[bs...])])
                }
            }
            switch result {
            case .success(let n) where n > 0:
                sent += n
            case .success:
                _ = await SocketWaiter.shared.wait(fd: c.fd, for: .writable)
            case .failure(let failure):
                if failure.code == EPIPE || failure.code == ECONNRESET { throw .ended(.reset) }
                throw .io(code: failure.code, "send to \(c.peerAddress): \(String(cString: strerror(failure.code)))")
            }
        }
    }

    public func receive() async -> TransportInput {
        let c = connection
        enum Step { case done(TransportInput), again, wait }
        while true {
            let step: Step = c.state.withLock { s in
                if let end = s.ended { return .done(.ended(end)) }
                if c.closed.load(ordering: .acquiring) {
                    s.ended = .localClose
                    return .done(.ended(.localClose))
                }
                do {
                    if let frame = try s.decoder.next(reusing: &s.spare) { return .done(.frame(frame)) }
                } catch {
                    s.ended = .malformed(String(describing: error))
                    return .done(.ended(.malformed(String(describing: error))))
                }
                var result = TCPSocket.Received.wouldBlock
                _ = s.decoder.withSpace(256 * 1024) { space in
                    result = TCPSocket.receive(c.fd, into: space)
                    if case .bytes(let n) = result { return n }
                    return 0
                }
                switch result {
                case .bytes: return .again
                case .wouldBlock: return .wait
                case .closed where c.closed.load(ordering: .acquiring), .failed where c.closed.load(ordering: .acquiring):
                    s.ended = .localClose  // our own shutdown, seen by a read that was already under way
                    return .done(.ended(.localClose))
                case .closed:
                    let end: TransportEnd = s.decoder.bufferedCount > 0 ? .reset : .peerClosed
                    s.ended = end
                    return .done(.ended(end))
                case .failed(let code):
                    let end: TransportEnd = code == ECONNRESET || code == EPIPE ? .reset
                        : .localFailure("receive from \(c.peerAddress): \(String(cString: strerror(code)))")
                    s.ended = end
                    return .done(.ended(end))
                }
            }
            switch step {
            case .done(let input): return input
            case .again: continue
            case .wait: _ = await SocketWaiter.shared.wait(fd: c.fd, for: .readable)
            }
        }
    }

    /// Keeps `frame`'s storage for the next frame received (see ``MessageTransport/recycle(_:)``).
    public func recycle(_ frame: [UInt8]) {
        guard frame.capacity <= SessionWire.maximumFrameLength + 64 else { return }
        connection.state.withLock { $0.spare = frame }
    }

    public func close() async {
        if connection.closed.exchange(true, ordering: .acquiringAndReleasing) { return }
        _ = shutdown(connection.fd, Int32(SHUT_RDWR))
    }

    /// Closes abortively (RST), as a crashed process would: for tests of a vanished peer.
    public func abort() {
        if connection.closed.exchange(true, ordering: .acquiringAndReleasing) { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(connection.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        _ = shutdown(connection.fd, Int32(SHUT_RDWR))
    }
}
