#if canImport(Glibc)
import Glibc
#endif

/// The POSIX socket calls a ``KISSServer`` makes, each wrapped once: `EINTR` retried where that is
/// right, failures returned as `errno` values, nothing blocking.
enum KISSServerSocket {
    /// A listening TCP socket on `host:port` (non-blocking, close-on-exec, `SO_REUSEADDR`), and the
    /// port it got (the one asked for, or the kernel's choice for 0).
    static func listen(host: String, port: Int, backlog: Int32 = 16) throws(KISSServerError) -> (fd: Int32, port: Int) {
        let what = "cannot listen on \(host.contains(":") ? "[\(host)]" : host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let text = rc == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(rc))
            throw KISSServerError(kind: .invalidAddress, operation: "getaddrinfo", code: rc == EAI_SYSTEM ? errno : 0,
                                  description: "\(what): '\(host)' is not an address of this machine: \(text)")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                        | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", code: errno, what: what) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 {
            let code = errno
            Glibc.close(fd)
            throw .system("bind", code: code, what: what)
        }
        if Glibc.listen(fd, backlog) != 0 {
            let code = errno
            Glibc.close(fd)
            throw .system("listen", code: code, what: what)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard got == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .system("getsockname", code: code, what: what)
        }
        return (fd, Int(describe(&storage, length: length).port))
    }

    /// Result of ``accept(_:)``.
    enum Accepted {
        /// A new connection (non-blocking, close-on-exec) and the peer's address.
        case connection(fd: Int32, peer: String)
        /// Nothing waiting.
        case none
        /// A connection that failed before it was accepted (skip it), or a resource limit (`EMFILE`).
        case failed(code: Int32)
    }

    static func accept(_ listener: Int32) -> Accepted {
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
                var one: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                let d = describe(&storage, length: length)
                return .connection(fd: fd, peer: d.text)
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .none
            default: return .failed(code: errno)
            }
        }
    }

    /// Result of ``receive(_:into:)``.
    enum Received {
        case bytes(Int)
        case wouldBlock
        case closed
        case failed(code: Int32)
    }

    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Received {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(code: errno)
            }
        }
    }

    /// Sends what the socket takes now: the count sent (maybe 0), or the `errno` of a failure.
    /// Never raises SIGPIPE.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, SocketFailure> {
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

    struct SocketFailure: Error {
        var code: Int32
    }

    /// `poll(2)`: the number of ready descriptors, 0 on timeout or interruption by a signal (so the
    /// caller can check its stop flag).
    static func poll(_ fds: inout [pollfd], timeoutMilliseconds: Int) throws(KISSServerError) -> Int {
        let timeout = Int32(clamping: max(-1, timeoutMilliseconds))
        let n = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), timeout) }
        if n >= 0 { return Int(n) }
        if errno == EINTR { return 0 }
        throw .system("poll", code: errno, what: "KISS server")
    }

    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Sets the kernel's send buffer of a socket (bytes; the kernel doubles and clamps it).
    static func setSendBuffer(_ fd: Int32, bytes: Int) {
        var value = Int32(clamping: bytes)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// `127.0.0.1:50412` or `[::1]:50412`, and the port.
    static func describe(_ storage: inout sockaddr_storage, length: socklen_t) -> (text: String, port: UInt16) {
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
}
