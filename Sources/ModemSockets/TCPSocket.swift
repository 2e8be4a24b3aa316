#if canImport(Glibc)
import Glibc
#endif
import ModemRuntime

/// A failed socket call: the C call, its `errno` and a one-line explanation in the caller's context.
public struct SocketError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What kind of failure it is, for callers that react to some of them.
    public enum Kind: Sendable, Hashable {
        /// The host is not an address or name that resolves.
        case invalidAddress
        /// Another socket is already listening on the address and port (`EADDRINUSE`).
        case addressInUse
        /// Not allowed, e.g. a port below 1024 without privileges (`EACCES`).
        case permissionDenied
        /// Nobody listens there (`ECONNREFUSED`).
        case refused
        /// No answer within the time allowed.
        case timedOut
        /// The waiting task was cancelled.
        case cancelled
        /// Any other failure of a socket call.
        case systemCallFailed
    }

    /// The kind of failure.
    public var kind: Kind
    /// The C call that failed, e.g. `bind`.
    public var operation: String
    /// Its `errno` (0 when it was not an `errno` failure, e.g. `getaddrinfo`).
    public var code: Int32
    /// The full one-line explanation.
    public var description: String

    /// Creates an error.
    public init(kind: Kind, operation: String, code: Int32, description: String) {
        self.kind = kind
        self.operation = operation
        self.code = code
        self.description = description
    }

    /// The failure of `operation` with `errno` `code`, explained in the context of `what` (e.g.
    /// "cannot listen on 127.0.0.1:8001").
    public static func system(_ operation: String, code: Int32, what: String) -> SocketError {
        let text = String(cString: strerror(code))
        switch code {
        case EADDRINUSE:
            return SocketError(kind: .addressInUse, operation: operation, code: code,
                               description: "\(what): the port is in use (another program is listening on it): \(operation): \(text) (errno \(code))")
        case EACCES, EPERM:
            return SocketError(kind: .permissionDenied, operation: operation, code: code,
                               description: "\(what): permission denied (ports below 1024 need privileges): \(operation): \(text) (errno \(code))")
        case EADDRNOTAVAIL:
            return SocketError(kind: .invalidAddress, operation: operation, code: code,
                               description: "\(what): the address is not one of this machine's: \(operation): \(text) (errno \(code))")
        case ECONNREFUSED:
            return SocketError(kind: .refused, operation: operation, code: code,
                               description: "\(what): connection refused (nothing listens there): \(operation): \(text) (errno \(code))")
        case ETIMEDOUT:
            return SocketError(kind: .timedOut, operation: operation, code: code,
                               description: "\(what): timed out: \(operation): \(text) (errno \(code))")
        default:
            return SocketError(kind: .systemCallFailed, operation: operation, code: code,
                               description: "\(what): \(operation): \(text) (errno \(code))")
        }
    }
}

/// The POSIX TCP calls, each wrapped once: `EINTR` retried where that is right, failures returned as
/// `errno` values or ``SocketError``, nothing blocking except the synchronous
/// ``connect(host:port:timeoutMilliseconds:)`` (bounded by its timeout) and
/// ``poll(_:timeoutMilliseconds:)``. Descriptors are non-blocking and close-on-exec. The one TCP
/// connect of the code base: messaging's TCP transport, the wormhole's streams and H4 over TCP all
/// connect here (async code awaits the async ``connect(host:port:timeoutMilliseconds:)``, which
/// resolves the name on ``BlockingCalls`` and waits for the connection on the runtime's event loop).
public enum TCPSocket {
    /// `host` with brackets when it is an IPv6 literal, then `:port`.
    public static func hostPort(_ host: String, _ port: Int) -> String {
        "\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    private static func resolve(host: String, port: Int, passive: Bool, what: String) throws(SocketError) -> UnsafeMutablePointer<addrinfo> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = (passive ? AI_PASSIVE : 0) | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let text = rc == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(rc))
            let role = passive ? "is not an address of this machine" : "does not resolve"
            throw SocketError(kind: .invalidAddress, operation: "getaddrinfo", code: rc == EAI_SYSTEM ? errno : 0,
                              description: "\(what): '\(host)' \(role): \(text)")
        }
        return first
    }

    /// A listening TCP socket on `host:port` (non-blocking, close-on-exec, `SO_REUSEADDR`), and the
    /// port it got (the one asked for, or the kernel's choice for 0).
    public static func listen(host: String, port: Int, backlog: Int32 = 16) throws(SocketError) -> (fd: Int32, port: Int) {
        let what = "cannot listen on \(hostPort(host, port))"
        let list = try resolve(host: host, port: port, passive: true, what: what)
        defer { freeaddrinfo(list) }
        let first = list.pointee
        let fd = socket(first.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", code: errno, what: what) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if bind(fd, first.ai_addr, first.ai_addrlen) != 0 {
            let code = errno
            Glibc.close(fd)
            throw .system("bind", code: code, what: what)
        }
        if Glibc.listen(fd, backlog) != 0 {
            let code = errno
            Glibc.close(fd)
            throw .system("listen", code: code, what: what)
        }
        guard let local = localAddress(fd) else {
            let code = errno
            Glibc.close(fd)
            throw .system("getsockname", code: code, what: what)
        }
        return (fd, Int(local.port))
    }

    /// The local address of a socket (`getsockname`), or nil.
    public static func localAddress(_ fd: Int32) -> (text: String, port: UInt16)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return got == 0 ? describe(&storage, length: length) : nil
    }

    /// Result of ``accept(_:)``.
    public enum Accepted: Sendable {
        /// A new connection (non-blocking, close-on-exec, `TCP_NODELAY`) and the peer's address.
        case connection(fd: Int32, peer: String)
        /// Nothing waiting.
        case none
        /// A connection that failed before it was accepted (skip it), or a resource limit (`EMFILE`).
        case failed(code: Int32)
    }

    /// Accepts one waiting connection, without blocking.
    public static func accept(_ listener: Int32) -> Accepted {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        while true {
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.accept(listener, $0, &length)
                }
            }
            if fd >= 0 {
                // accept(2) does not pass on the listener's O_NONBLOCK on Linux.
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                setNoDelay(fd)
                return .connection(fd: fd, peer: describe(&storage, length: length).text)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .none
            default: return .failed(code: errno)
            }
        }
    }

    /// Connects to `host:port` (each resolved address in turn), waiting at most
    /// `timeoutMilliseconds` for each. Blocks the calling thread for that long at most: call it off
    /// Swift's cooperative pool, or through ``SocketWaiter``-based code.
    /// - Returns: the connected socket (non-blocking, close-on-exec, `TCP_NODELAY`) and the peer's address.
    public static func connect(host: String, port: Int, timeoutMilliseconds: Int) throws(SocketError) -> (fd: Int32, peer: String) {
        let what = "cannot connect to \(hostPort(host, port))"
        let list = try resolve(host: host, port: port, passive: false, what: what)
        defer { freeaddrinfo(list) }
        var failure = SocketError(kind: .invalidAddress, operation: "getaddrinfo", code: 0, description: "\(what): no address")
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { failure = .system("socket", code: errno, what: what); continue }
            var rc = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen)
            var code: Int32 = rc == 0 ? 0 : errno
            if rc != 0 && (code == EINPROGRESS || code == EINTR) {
                var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
                rc = Int32((try? poll(&fds, timeoutMilliseconds: timeoutMilliseconds)) ?? 0)
                if rc == 0 {
                    code = ETIMEDOUT
                } else {
                    var soError: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
                    code = soError
                }
            }
            if code == 0 {
                setNoDelay(fd)
                var storage = sockaddr_storage()
                let length = socklen_t(info.pointee.ai_addrlen)
                withUnsafeMutableBytes(of: &storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(length)))
                }
                return (fd, describe(&storage, length: length).text)
            }
            Glibc.close(fd)
            failure = .system("connect", code: code, what: what)
        }
        throw failure
    }

    /// One resolved address: its family and `sockaddr` bytes.
    private struct ResolvedAddress: Sendable {
        var family: Int32
        var bytes: [UInt8]
    }

    private static func resolvedAddresses(host: String, port: Int, what: String) throws(SocketError) -> [ResolvedAddress] {
        let list = try resolve(host: host, port: port, passive: false, what: what)
        defer { freeaddrinfo(list) }
        var out: [ResolvedAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let info = entry {
            entry = info.pointee.ai_next
            out.append(ResolvedAddress(family: info.pointee.ai_family,
                                       bytes: Array(UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen)))))
        }
        return out
    }

    /// Connects to `host:port` (each resolved address in turn) within `timeoutMilliseconds` in all,
    /// without holding a thread: the name is resolved on ``BlockingCalls`` (`getaddrinfo` may block on
    /// DNS), the connection is awaited on the runtime's event loop (``SocketWaiter``). Cancelling the
    /// task ends the attempt at once (kind ``SocketError/Kind/cancelled``).
    /// - Returns: the connected socket (non-blocking, close-on-exec, `TCP_NODELAY`) and the peer's address.
    public static func connect(host: String, port: Int, timeoutMilliseconds: Int) async throws(SocketError) -> (fd: Int32, peer: String) {
        try await connect(host: host, port: port, deadline: TimerClock.continuous.deadline(after: Double(max(0, timeoutMilliseconds)) / 1000))
    }

    /// Connects to `host:port` (each resolved address in turn) by `deadline`, on the deadline's clock
    /// (a test's manual clock decides when an attempt times out); otherwise as
    /// ``connect(host:port:timeoutMilliseconds:)``.
    public static func connect(host: String, port: Int, deadline: Deadline) async throws(SocketError) -> (fd: Int32, peer: String) {
        let what = "cannot connect to \(hostPort(host, port))"
        let addresses = try await BlockingCalls.run { () throws(SocketError) -> [ResolvedAddress] in
            try resolvedAddresses(host: host, port: port, what: what)
        }
        var failure = SocketError(kind: .invalidAddress, operation: "getaddrinfo", code: 0, description: "\(what): no address")
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { failure = .system("socket", code: errno, what: what); continue }
            var code: Int32 = address.bytes.withUnsafeBytes { a in
                Glibc.connect(fd, a.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(a.count)) == 0 ? 0 : errno
            }
            if code == EINPROGRESS || code == EINTR {
                switch await SocketWaiter.shared.wait(fd: fd, for: .writable, until: deadline) {
                case .ready:
                    var soError: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
                    code = soError
                case .timedOut:
                    code = ETIMEDOUT
                case .cancelled:
                    Glibc.close(fd)
                    throw SocketError(kind: .cancelled, operation: "connect", code: ECANCELED, description: "\(what): cancelled")
                }
            }
            if code == 0 {
                setNoDelay(fd)
                var storage = sockaddr_storage()
                let length = socklen_t(address.bytes.count)
                withUnsafeMutableBytes(of: &storage) { dst in
                    address.bytes.withUnsafeBytes { dst.copyMemory(from: $0) }
                }
                return (fd, describe(&storage, length: length).text)
            }
            Glibc.close(fd)
            failure = .system("connect", code: code, what: what)
        }
        throw failure
    }

    /// Result of ``receive(_:into:)``.
    public enum Received: Sendable, Equatable {
        /// This many bytes were read.
        case bytes(Int)
        /// Nothing to read now.
        case wouldBlock
        /// The peer closed its end in order (FIN).
        case closed
        /// A failure (`ECONNRESET` when the peer's end was reset).
        case failed(code: Int32)
    }

    /// Reads what is there now, without blocking.
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Received {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { return .bytes(n) }
            if n == 0 { return buffer.isEmpty ? .bytes(0) : .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(code: errno)
            }
        }
    }

    /// A failed send: its `errno`.
    public struct SocketFailure: Error, Sendable, Equatable {
        /// The `errno` of the failure (`EPIPE`, `ECONNRESET`...).
        public var code: Int32
        /// Creates a failure.
        public init(code: Int32) { self.code = code }
    }

    /// Sends what the socket takes now: the count sent (maybe 0), or the `errno` of a failure.
    /// Never raises SIGPIPE.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, SocketFailure> {
        while true {
            let n = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            if n >= 0 { return .success(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .success(0)
            default: return .failure(SocketFailure(code: errno))
            }
        }
    }

    /// Sends what the socket takes now from several buffers in order (`sendmsg` with an I/O
    /// vector, so a header and a body leave without being joined first): the count sent (maybe 0),
    /// or the `errno` of a failure. Never raises SIGPIPE.
    public static func send(_ fd: Int32, parts: [UnsafeRawBufferPointer]) -> Result<Int, SocketFailure> {
        var vectors = parts.filter { !$0.isEmpty }.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
        if vectors.isEmpty { return .success(0) }
        while true {
            let n = vectors.withUnsafeMutableBufferPointer { v -> Int in
                var message = msghdr()
                message.msg_iov = v.baseAddress
                message.msg_iovlen = v.count
                return sendmsg(fd, &message, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            }
            if n >= 0 { return .success(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .success(0)
            default: return .failure(SocketFailure(code: errno))
            }
        }
    }

    /// Waits as `poll(2)` does, on the process's one descriptor loop (``SocketWaiter``), blocking
    /// the calling thread: the number of ready descriptors (their `revents` filled in), 0 on timeout.
    /// Call it from a thread of the caller's own, never from a cooperative one.
    public static func poll(_ fds: inout [pollfd], timeoutMilliseconds: Int) throws(SocketError) -> Int {
        SocketWaiter.shared.block(&fds, timeoutMilliseconds: timeoutMilliseconds < 0 ? nil : timeoutMilliseconds)
    }

    /// Closes a descriptor.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Closes a connection abortively (RST instead of FIN), as a crashed peer would.
    public static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        _ = Glibc.close(fd)
    }

    /// Shuts down the sending direction (FIN), keeping the receiving one.
    public static func shutdownWrite(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small frames).
    public static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sets the kernel's send buffer of a socket (bytes; the kernel doubles and clamps it).
    public static func setSendBuffer(_ fd: Int32, bytes: Int) {
        var value = Int32(clamping: bytes)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sets the kernel's receive buffer of a socket (bytes; the kernel doubles and clamps it).
    public static func setReceiveBuffer(_ fd: Int32, bytes: Int) {
        var value = Int32(clamping: bytes)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// `127.0.0.1:50412` or `[::1]:50412`, and the port.
    public static func describe(_ storage: inout sockaddr_storage, length: socklen_t) -> (text: String, port: UInt16) {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                            NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard rc == 0 else { return ("?", 0) }
        func text(_ chars: [CChar]) -> String {
            String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        let h = text(host), s = text(service)
        return (h.contains(":") ? "[\(h)]:\(s)" : "\(h):\(s)", UInt16(s) ?? 0)
    }

    /// The host part of a described address (`[::1]:5` -> `::1`, `127.0.0.1:5` -> `127.0.0.1`).
    public static func hostOf(_ described: String) -> String {
        if described.hasPrefix("["), let close = described.firstIndex(of: "]") {
            return String(described[described.index(after: described.startIndex)..<close])
        }
        return String(described.split(separator: ":").first ?? Substring(described))
    }
}
