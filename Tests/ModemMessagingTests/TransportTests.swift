#if canImport(Glibc)
import Glibc
#endif
import ModemMessaging
import ModemSockets
import ModemTransport
import ProcessTestSupport
import Testing
import ModemRuntime

/// A raw TCP client for the transport tests (what a foreign program would do).
func rawConnect(port: Int) throws -> Int32 {
    try TCPSocket.connect(host: "127.0.0.1", port: port, timeoutMilliseconds: 60_000).fd
}

func rawSend(_ fd: Int32, _ bytes: [UInt8]) {
    var sent = 0
    while sent < bytes.count {
        let r = bytes.withUnsafeBytes { TCPSocket.send(fd, UnsafeRawBufferPointer(rebasing: $0[sent...])) }
        if case .success(let n) = r { sent += n; if n == 0 { usleep(1000) } } else { return }
    }
}

/// Reads until `count` bytes or the end; what came when the hang guard (60 s) runs out.
func rawReceive(_ fd: Int32, count: Int) async -> [UInt8] {
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while out.count < count {
        let r = buffer.withUnsafeMutableBytes { TCPSocket.receive(fd, into: $0) }
        switch r {
        case .bytes(let n): out += buffer[0..<n]
        case .wouldBlock:
            if await SocketWaiter.shared.wait(fd: fd, for: .readable, timeoutMilliseconds: 60_000) != .ready { return out }
        default: return out
        }
    }
    return out
}

@Suite("TCP transport")
struct TransportTests {
    @Test("frames of every size cross both ways in order; an orderly close is .peerClosed")
    func framesBothWays() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        async let accepted = listener.accept()
        let dialer = try await TCPTransport.dial(host: "127.0.0.1", port: listener.port)
        let server = try await accepted
        #expect(server.peerAddress.hasPrefix("127.0.0.1:"))
        let sizes = [1, 2, 100, 4096, 65_535, SessionWire.maximumFrameLength]
        let frames = sizes.map { n in (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) } }
        let writer = Task {
            for f in frames { try await dialer.send(f) }
            for f in frames.reversed() { try await dialer.send(f) }
            await dialer.close()
        }
        var got: [[UInt8]] = []
        while case .frame(let f) = await server.receive() { got.append(f) }
        try await writer.value
        #expect(got == frames + frames.reversed())
        #expect(await server.receive() == .ended(.peerClosed))
        #expect(await server.receive() == .ended(.peerClosed))
        await #expect(throws: TransportError.closed("the connection")) { try await dialer.send([1]) }
        await #expect(throws: TransportError.emptyFrame) { try await server.send([]) }
        let maximum = SessionWire.maximumFrameLength
        await #expect(throws: TransportError.frameTooLarge(size: maximum + 1, maximum: maximum)) {
            try await server.send([UInt8](repeating: 0, count: maximum + 1))
        }
        listener.close()
    }

    @Test("a reset, a cut mid-frame, a local close, an oversized length: each ends the input with its reason")
    func ends() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        // Abortive close (a crashed peer).
        async let a1 = listener.accept()
        let d1 = try await TCPTransport.dial(host: "127.0.0.1", port: listener.port)
        let s1 = try await a1
        try await d1.send([1, 2, 3])
        #expect(await s1.receive() == .frame([1, 2, 3]))
        d1.abort()
        let end1 = await s1.receive()
        #expect(end1 == .ended(.reset) || end1 == .ended(.peerClosed))

        // Cut in the middle of a frame.
        let raw = try rawConnect(port: listener.port)
        rawSend(raw, SessionWire.preamble + [0, 0, 0, 10, 1, 2, 3])
        let s2 = try await listener.accept()
        TCPSocket.close(raw)
        #expect(await s2.receive() == .ended(.reset))

        // Oversized length.
        let raw3 = try rawConnect(port: listener.port)
        rawSend(raw3, SessionWire.preamble + SessionFrameDecoder.lengthPrefix(70_000))
        let s3 = try await listener.accept()
        if case .ended(.malformed(let text)) = await s3.receive() { #expect(text.contains("70000")) } else { Issue.record("not malformed") }
        TCPSocket.close(raw3)

        // A local close wakes a pending receive.
        async let a4 = listener.accept()
        let d4 = try await TCPTransport.dial(host: "127.0.0.1", port: listener.port)
        let s4 = try await a4
        let pending = Task { await s4.receive() }
        try await Task.sleep(for: .milliseconds(100))
        await s4.close()
        #expect(await pending.value == .ended(.localClose))
        await d4.close()
        listener.close()
    }

    @Test("connections without the SMsg preamble are handed out at once and end as malformed or closed; the next is served")
    func preambleGate() async throws {
        // Each connection comes out of accept() at once (a silent one must not hold the next accept);
        // its transport checks the preamble, so HTTP ends as malformed, a port scan as closed, both
        // before any cryptography, and the caller can log each.
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let http = try rawConnect(port: listener.port)
        rawSend(http, Array("GET / HTTP/1.1\r\n\r\n".utf8))
        let fromHTTP = try await listener.accept()
        guard case .ended(.malformed(let why)) = await fromHTTP.receive() else { Issue.record("HTTP was not malformed"); return }
        #expect(why.contains("not a SwiftModem session"), "\(why)")
        await fromHTTP.close()
        let scan = try rawConnect(port: listener.port)
        TCPSocket.close(scan)
        let fromScan = try await listener.accept()
        let scanEnd = await fromScan.receive()
        #expect(scanEnd == .ended(.peerClosed) || scanEnd == .ended(.reset), "\(scanEnd)")
        let silent = try rawConnect(port: listener.port)
        let fromSilent = try await listener.accept()
        async let accepted = listener.accept()
        let real = try await TCPTransport.dial(host: "127.0.0.1", port: listener.port)
        let server = try await accepted
        try await real.send([42])
        #expect(await server.receive() == .frame([42]))
        // The HTTP client was closed.
        #expect(await rawReceive(http, count: 1).isEmpty)
        TCPSocket.close(http)
        TCPSocket.close(silent)
        await fromSilent.close()
        listener.close()
    }

    @Test("more than the rate limit from one address: NOPE(4) before any handshake")
    func rateLimit() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0, rateLimit: 2, rateWindow: 60)
        let acceptor = Task { () -> Int in
            var n = 0
            while (try? await listener.accept()) != nil { n += 1 }
            return n
        }
        var transports: [TCPTransport] = []
        for _ in 0..<2 { transports.append(try await TCPTransport.dial(host: "127.0.0.1", port: listener.port)) }
        let third = try rawConnect(port: listener.port)
        rawSend(third, SessionWire.preamble + SessionFrameDecoder.encode([0x51] + [UInt8](repeating: 1, count: 32)))
        let answer = await rawReceive(third, count: 6)
        #expect(Array(answer.dropFirst(4).prefix(2)) == [0x55, 4])
        TCPSocket.close(third)
        listener.close()
        #expect(await acceptor.value == 2)
    }

    @Test("SocketWaiter: ready when data comes, timed out without, cancelled with its task")
    func socketWaiter() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        async let accepted = listener.accept()
        let dialer = try await TCPTransport.dial(host: "127.0.0.1", port: listener.port)
        let server = try await accepted
        let raw = try rawConnect(port: listener.port)  // an idle connection: never readable
        #expect(await SocketWaiter.shared.wait(fd: raw, for: .readable, timeoutMilliseconds: 100) == .timedOut)
        #expect(await SocketWaiter.shared.wait(fd: raw, for: .writable, timeoutMilliseconds: 1000) == .ready)
        let waiting = Task { await SocketWaiter.shared.wait(fd: raw, for: .readable) }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        #expect(await waiting.value == .cancelled)
        try await dialer.send([5])
        #expect(await server.receive() == .frame([5]))
        TCPSocket.close(raw)
        listener.close()
    }

    @Test("dialing nowhere fails with the address and the reason; listening twice on a port names the port")
    func dialFailures() async throws {
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let port = listener.port
        do {
            _ = try TCPListener(host: "127.0.0.1", port: port)
            Issue.record("listened twice on port \(port)")
        } catch {
            guard case .addressInUse = error else { Issue.record("expected .addressInUse, got \(error)"); return }
            #expect(error.description.contains("127.0.0.1:\(port)") && error.description.contains("in use"), "\(error)")
            #expect(!error.mayRetryDial)
        }
        listener.close()
        let refused = RefusedPort()
        do {
            _ = try await TCPTransport.dial(host: "127.0.0.1", port: refused.port)
            Issue.record("dialed a closed port")
        } catch {
            // The case the CLI's dial retries on (the peer's --listen may still be starting).
            guard case .connectionRefused = error else { Issue.record("expected .connectionRefused, got \(error)"); return }
            #expect(error.mayRetryDial)
            #expect(error.description.contains("127.0.0.1:\(refused.port)"))
            #expect(error.description.contains("refused"))
        }
        do {
            _ = try await TCPTransport.dial(host: "no-such-host.invalid", port: 1)
            Issue.record("dialed a name that does not resolve")
        } catch {
            guard case .invalidAddress = error else { Issue.record("expected .invalidAddress, got \(error)"); return }
            #expect(!error.mayRetryDial)
            #expect(error.description.contains("no-such-host.invalid"), "\(error)")
        }
    }

    @Test("a dial is retried on .connectionRefused alone: the decision is the case, never the words")
    func dialRetryDecisionIsByCase() {
        #expect(TransportError.connectionRefused("cannot connect to 127.0.0.1:9: connection refused").mayRetryDial)
        // Every other case is final, even when its words say "refused".
        let final: [TransportError] = [
            .timedOut("cannot connect to 127.0.0.1:9: timed out (refused?)"),
            .invalidAddress("'refused.invalid' does not resolve"),
            .addressInUse("refused: in use"), .permissionDenied("refused: permission denied"),
            .io(code: ECONNREFUSED, "connect: connection refused"),
            .emptyFrame, .frameTooLarge(size: 2, maximum: 1), .noDevice, .handshakeFailed,
            .ended(.localFailure("refused")), .ended(.peerClosed), .stopped(nil), .stopped(.malformed("refused")),
            .closed("the refused connection"), .cancelled("accepting (refused)"), .dialUnderWay, .acceptUnderWay,
        ]
        for error in final { #expect(!error.mayRetryDial, "\(error)") }
    }

    @Test("each transport error's description names the problem")
    func errorDescriptions() {
        let expected: [(TransportError, [String])] = [
            (.emptyFrame, ["frame is never empty"]),
            (.frameTooLarge(size: 70_000, maximum: 65_560), ["70000 bytes", "65560"]),
            (.noDevice, ["cannot open the link", "no device answered"]),
            (.handshakeFailed, ["cannot open the link", "handshake failed"]),
            (.ended(.peerClosed), ["has ended", "peer closed"]),
            (.ended(.reset), ["has ended", "reset"]),
            (.ended(.localClose), ["has ended", "closed here"]),
            (.ended(.localFailure("the audio device failed")), ["has ended", "the audio device failed"]),
            (.ended(.malformed("oversized length 99999")), ["framing", "oversized length 99999"]),
            (.stopped(nil), ["the link has stopped"]),
            (.stopped(.localFailure("the controller's address is A, not B")), ["the link stopped", "the controller's address is A, not B"]),
            (.closed("the listener on 127.0.0.1:5"), ["the listener on 127.0.0.1:5 is closed"]),
            (.cancelled("accepting on 127.0.0.1:5"), ["accepting on 127.0.0.1:5 was cancelled"]),
            (.dialUnderWay, ["a dial is already under way"]),
            (.acceptUnderWay, ["an accept is already waiting"]),
            (.io(code: EMFILE, "accept on 127.0.0.1:5: Too many open files"), ["accept on 127.0.0.1:5", "Too many open files"]),
        ]
        for (error, words) in expected {
            for w in words { #expect(error.description.contains(w), "\(error): \(error.description)") }
        }
    }
}
