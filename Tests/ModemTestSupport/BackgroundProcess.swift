import Foundation
import ProcessTestSupport
#if canImport(Glibc)
import Glibc
#endif

// Shared by the process-level tests (ModemCLITests: the TNC, mailbox, transfer and Bluetooth CLI tests).

/// A `modem` (or peer) process running in the background: the tests' one runner,
/// ``ProcessTestSupport/ChildProcess`` (standard output and error read as they come, waits woken by
/// them, killed and reaped when dropped), under the name the CLI tests know it by.
public typealias TNCBackgroundProcess = ChildProcess

extension ChildProcess {
    /// The port a `modem tnc --kiss-port 0` announced on standard error (10 s hang guard).
    public func listeningPort() async throws -> Int { try await kissPort(timeout: 10) }

    /// The port of the first standard error line that has `prefix` followed by digits (e.g.
    /// `"listening on tcp:127.0.0.1:"`, printed by `modem mailbox|receive --listen tcp:127.0.0.1:0`);
    /// waits for it up to `timeout` seconds (a hang guard), else throws naming what was awaited.
    public func announcedPort(after prefix: String, timeout: Double = 60) async throws -> Int {
        try await announcedNumber(after: prefix, on: .stderr, timeout: timeout)
    }

    /// The port `modem mailbox|receive --listen tcp:127.0.0.1:0` got (its `listening on` line).
    public func messagingPort(timeout: Double = 60) async throws -> Int {
        try await announcedPort(after: "listening on tcp:127.0.0.1:", timeout: timeout)
    }

    /// The port `modem tnc --kiss-port 0` got (its `KISS over TCP on` line), with a hang guard of
    /// `timeout` seconds.
    public func kissPort(timeout: Double = 60) async throws -> Int {
        try await announcedPort(after: "KISS over TCP on 127.0.0.1:", timeout: timeout)
    }
}

/// A TCP socket on a port of 127.0.0.1 that the kernel picks (port 0), listening or only bound.
private func loopbackSocket(listening: Bool) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && (!listening || listen(fd, 1) == 0) && getsockname(fd, $0, &length) == 0
        }
    }
    guard fd >= 0, ok else {
        let reason = errno
        if fd >= 0 { Glibc.close(fd) }
        throw TestSupportError("cannot \(listening ? "listen on" : "bind") 127.0.0.1: errno \(reason)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A TCP socket bound to a port of 127.0.0.1 but not listening: while it is open no other process
/// can take the port, and a connection to it is refused (the kernel answers with a reset).
public final class TCPRefusingPort {
    /// The socket.
    public let fd: Int32
    /// Its port.
    public let port: Int
    /// Binds a free port of 127.0.0.1 (port 0: the kernel picks one), without listening.
    public init() throws {
        (fd, port) = try loopbackSocket(listening: false)
    }
    /// Closes the socket.
    public func close() { Glibc.close(fd) }
}

/// A listening socket on 127.0.0.1 (a free port), to make a port busy.
public final class TNCTestListener {
    /// The socket.
    public let fd: Int32
    /// Its port.
    public let port: Int
    /// Listens on a free port of 127.0.0.1.
    public init() throws {
        (fd, port) = try loopbackSocket(listening: true)
    }
    /// Closes the socket.
    public func close() { Glibc.close(fd) }
}

