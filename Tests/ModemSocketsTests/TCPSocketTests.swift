import Foundation
import Glibc
import ModemRuntime
import ModemSockets
import Testing

/// ModemSockets' TCP wrapped once: listen, accept, both connects, the errors and their kinds.
@Suite("TCPSocket")
struct TCPSocketTests {
    /// A port nothing listens on: one the kernel gave a listener, which is then closed.
    private func closedPort() throws -> Int {
        let (fd, port) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        TCPSocket.close(fd)
        return port
    }

    /// The synchronous connect (a driver thread's), which async code does not see beside the async one.
    private func synchronousConnect(port: Int) throws(SocketError) -> (fd: Int32, peer: String) {
        try TCPSocket.connect(host: "127.0.0.1", port: port, timeoutMilliseconds: 60_000)
    }

    /// Accepts one connection, waiting on the event loop.
    private func acceptOne(_ listener: Int32) async -> (fd: Int32, peer: String)? {
        while true {
            switch TCPSocket.accept(listener) {
            case .connection(let fd, let peer): return (fd, peer)
            case .none:
                guard await SocketWaiter.shared.wait(fd: listener, for: .readable, timeoutMilliseconds: 60_000) == .ready else { return nil }
            case .failed: return nil
            }
        }
    }

    @Test("listen on port 0 gets a port; a synchronous connect is accepted; bytes go both ways")
    func synchronousRoundTrip() async throws {
        let (listener, port) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        defer { TCPSocket.close(listener) }
        #expect(port > 0)
        #expect(TCPSocket.localAddress(listener)?.port == UInt16(port))
        let client = try synchronousConnect(port: port)
        defer { TCPSocket.close(client.fd) }
        #expect(client.peer == "127.0.0.1:\(port)")
        let server = try #require(await acceptOne(listener))
        defer { TCPSocket.close(server.fd) }
        #expect(server.peer.hasPrefix("127.0.0.1:"))
        #expect(TCPSocket.hostOf(server.peer) == "127.0.0.1")
        let sent = [UInt8]("ping".utf8).withUnsafeBytes { TCPSocket.send(client.fd, $0) }
        #expect((try? sent.get()) == 4)
        #expect(await SocketWaiter.shared.wait(fd: server.fd, for: .readable, timeoutMilliseconds: 60_000) == .ready)
        var buffer = [UInt8](repeating: 0, count: 16)
        let got = buffer.withUnsafeMutableBytes { TCPSocket.receive(server.fd, into: $0) }
        #expect(got == .bytes(4))
        #expect(Array(buffer.prefix(4)) == Array("ping".utf8))
        TCPSocket.shutdownWrite(client.fd)
        #expect(await SocketWaiter.shared.wait(fd: server.fd, for: .readable, timeoutMilliseconds: 60_000) == .ready)
        #expect(buffer.withUnsafeMutableBytes { TCPSocket.receive(server.fd, into: $0) } == .closed)
    }

    @Test("the async connect reaches a listener without holding a thread, and names the peer")
    func asyncConnect() async throws {
        let (listener, port) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        defer { TCPSocket.close(listener) }
        let client = try await TCPSocket.connect(host: "127.0.0.1", port: port, timeoutMilliseconds: 60_000)
        defer { TCPSocket.close(client.fd) }
        #expect(client.peer == "127.0.0.1:\(port)")
        let server = try #require(await acceptOne(listener))
        TCPSocket.close(server.fd)
    }

    @Test("nothing listening: both connects fail with kind refused, naming the address")
    func refused() async throws {
        let port = try closedPort()
        let sync = #expect(throws: SocketError.self) { _ = try TCPSocket.connect(host: "127.0.0.1", port: port, timeoutMilliseconds: 60_000) }
        #expect(sync?.kind == .refused)
        #expect(sync?.description.hasPrefix("cannot connect to 127.0.0.1:\(port): connection refused") == true)
        do {
            _ = try await TCPSocket.connect(host: "127.0.0.1", port: port, timeoutMilliseconds: 60_000)
            Issue.record("connected to a closed port")
        } catch {
            #expect(error.kind == .refused)
            #expect(error.operation == "connect")
        }
    }

    @Test("a port in use is an error of its kind, naming the address")
    func listenErrors() throws {
        let (listener, port) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        defer { TCPSocket.close(listener) }
        let inUse = #expect(throws: SocketError.self) { _ = try TCPSocket.listen(host: "127.0.0.1", port: port) }
        #expect(inUse?.kind == .addressInUse)
        #expect(inUse?.description.hasPrefix("cannot listen on 127.0.0.1:\(port): the port is in use") == true)
    }

    @Test("host:port text brackets IPv6 literals")
    func hostPort() {
        #expect(TCPSocket.hostPort("127.0.0.1", 80) == "127.0.0.1:80")
        #expect(TCPSocket.hostPort("::1", 80) == "[::1]:80")
        #expect(TCPSocket.hostPort("example.org", 443) == "example.org:443")
    }
}
