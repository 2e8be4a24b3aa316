#if canImport(Glibc)
import Glibc
#endif
import Crypto
import ModemMessaging
import Synchronization
import Testing

/// Two key folders; `mutual` makes them trust each other.
func keyPair(mutual: Bool = true) throws -> (KeyStore, KeyStore) {
    let a = try KeyStore(folder: temporaryKeysPath("sa"))
    let b = try KeyStore(folder: temporaryKeysPath("sb"))
    if mutual {
        try a.trust(name: "bob", publicKey: b.publicKey())
        try b.trust(name: "alice", publicKey: a.publicKey())
    }
    return (a, b)
}

/// A transport wrapper whose line can be cut (frames stop both ways, the connection stays up).
final class CuttableTransport: MessageTransport {
    let inner: TCPTransport
    init(inner: TCPTransport) { self.inner = inner }
    let cut = Atomic<Bool>(false)
    var kind: TransportKind { inner.kind }
    var maximumFrameSize: Int { inner.maximumFrameSize }
    func send(_ frame: [UInt8]) async throws(TransportError) {
        if cut.load(ordering: .relaxed) { return }
        try await inner.send(frame)
    }
    func receive() async -> TransportInput {
        while true {
            let input = await inner.receive()
            if case .frame = input, cut.load(ordering: .relaxed) { continue }
            return input
        }
    }
    /// A cut line does not carry our close either; the test closes `inner` at its end.
    func close() async { if !cut.load(ordering: .relaxed) { await inner.close() } }
}

/// A transport wrapper that notes when it was closed.
final class WatchedTransport: MessageTransport {
    let inner: TCPTransport
    private let flag = Atomic<Bool>(false)
    var isClosed: Bool { flag.load(ordering: .acquiring) }
    init(inner: TCPTransport) { self.inner = inner }
    var kind: TransportKind { inner.kind }
    var maximumFrameSize: Int { inner.maximumFrameSize }
    func send(_ frame: [UInt8]) async throws(TransportError) { try await inner.send(frame) }
    func receive() async -> TransportInput { await inner.receive() }
    func close() async {
        await inner.close()
        flag.store(true, ordering: .releasing)
    }
}

/// Sessions on both ends of a loopback TCP connection.
func sessionPair(keys: (KeyStore, KeyStore), keepalive: Double? = nil, limitsA: SessionLimits? = nil,
                 wrap: @escaping @Sendable (TCPTransport, Bool) -> any MessageTransport = { t, _ in t })
    async throws -> (Result<NoiseSession, SessionFailure>, Result<NoiseSession, SessionFailure>) {
    let listener = try TCPListener(host: "127.0.0.1", port: 0)
    defer { listener.close() }
    let optionsA = SessionOptions(userName: "alice", service: .mailbox, keepalive: keepalive, keys: keys.0, limits: limitsA ?? SessionLimits.none)
    let optionsB = SessionOptions(userName: "bob", service: .mailbox, keepalive: keepalive, keys: keys.1, limits: SessionLimits.none)
    async let responder: Result<NoiseSession, SessionFailure> = {
        do {
            let t = try await listener.accept()
            return .success(try await NoiseSession.establish(over: wrap(t, false), initiator: false, options: optionsB))
        } catch let e as SessionFailure {
            return .failure(e)
        } catch {
            return .failure(.networkUnavailable("\(error)"))
        }
    }()
    let transport = try await TCPTransport.dial(host: "127.0.0.1", port: listener.port)
    let initiator: Result<NoiseSession, SessionFailure>
    do {
        initiator = .success(try await NoiseSession.establish(over: wrap(transport, true), initiator: true, options: optionsA))
    } catch {
        initiator = .failure(error)
    }
    return (initiator, await responder)
}

/// Reads records until the session's end; returns them and the end.
func drain(_ s: NoiseSession, closeOnPeerClosing: Bool = true) async -> ([[UInt8]], SessionEnd) {
    var records: [[UInt8]] = []
    while true {
        switch await s.receive() {
        case .record(_, let body): records.append(body)
        case .peerClosing: if closeOnPeerClosing { await s.close() }
        case .ended(let end): return (records, end)
        }
    }
}

@Suite("Noise session over TCP")
struct NoiseSessionTests {
    @Test("established both ways with names and keys; 300 records each way in order; close: END_USER_QUIT and END_OTHER_USER_QUIT")
    func exchangeAndClose() async throws {
        let keys = try keyPair()
        let (ra, rb) = try await sessionPair(keys: keys)
        let a = try ra.get(), b = try rb.get()
        #expect(a.peer == SessionPeer(name: "bob", publicKey: try keys.1.publicKey()))
        #expect(b.peer == SessionPeer(name: "alice", publicKey: try keys.0.publicKey()))
        let messages = (0..<300).map { i in [UInt8](repeating: UInt8(i % 256), count: i * 7 % 5000 + 1) }
        let readerB = Task { await drain(b) }
        for m in messages { try await a.send(kind: 0x10, body: m) }
        let senderB = Task { for m in messages.reversed() { try await b.send(kind: 0x11, body: m) } }
        try await senderB.value
        await a.close()
        let (gotA, endA) = await drain(a, closeOnPeerClosing: false)
        let (gotB, endB) = await readerB.value
        #expect(gotB == messages)
        #expect(gotA == messages.reversed())
        #expect(endA == .userQuit(nil))
        #expect(endB == .otherUserQuit)
        await #expect(throws: SessionSendError.self) { try await a.send(kind: 0x10, body: [1]) }
        #expect(await a.receive() == .ended(.userQuit(nil)))
    }

    @Test("an untrusted key fails both sides with FAIL_INVALID_AUTHORIZATION, each way round")
    func untrusted() async throws {
        let (a, b) = try keyPair(mutual: false)
        try a.trust(name: "bob", publicKey: b.publicKey())  // only the initiator trusts
        let (ra, rb) = try await sessionPair(keys: (a, b))
        #expect(throws: SessionFailure.self) { try ra.get() }
        if case .failure(let f) = ra { #expect(f.seedName == "FAIL_INVALID_AUTHORIZATION") }
        if case .failure(let f) = rb { #expect(f.seedName == "FAIL_INVALID_AUTHORIZATION") } else { Issue.record("responder connected") }

        let (c, d) = try keyPair(mutual: false)
        try d.trust(name: "carol", publicKey: c.publicKey())  // only the responder trusts
        let (rc, rd) = try await sessionPair(keys: (c, d))
        if case .failure(let f) = rc { #expect(f.seedName == "FAIL_INVALID_AUTHORIZATION") } else { Issue.record("initiator connected") }
        if case .failure(let f) = rd { #expect(f.seedName == "FAIL_INVALID_AUTHORIZATION") } else { Issue.record("responder connected") }
    }

    @Test("a peer whose connection vanishes (RST) is END_OTHER_USER_LOST at once; a silent line is END_LOST_NET after 2 x keepalive")
    func lostPeers() async throws {
        let keys = try keyPair()
        let transports = Mutex<[TCPTransport]>([])
        let (ra, rb) = try await sessionPair(keys: keys, keepalive: 0.5) { t, initiator in
            if !initiator { transports.withLock { $0.append(t) } }
            return t
        }
        let a = try ra.get()
        _ = try rb.get()
        let start = ContinuousClock.now
        transports.withLock { $0[0] }.abort()  // the responder's socket, as if its process died
        let (_, end) = await drain(a)
        #expect(end.seedName == "END_OTHER_USER_LOST")
        #expect(ContinuousClock.now - start < .seconds(5))  // at once: EOF/RST, not the keepalive (generous for loaded CI)

        let cuts = Mutex<[CuttableTransport]>([])
        // Keepalive 2 s here, so a loaded machine's scheduling delays do not look like silence.
        let (rc, rd) = try await sessionPair(keys: keys, keepalive: 2) { t, _ in
            let c = CuttableTransport(inner: t)
            cuts.withLock { $0.append(c) }
            return c
        }
        let c = try rc.get(), d = try rd.get()
        try await Task.sleep(for: .seconds(5))  // keepalive keeps an idle session up
        for t in cuts.withLock({ $0 }) { t.cut.store(true, ordering: .relaxed) }
        let cutAt = ContinuousClock.now
        let (_, endC) = await drain(c)
        let (_, endD) = await drain(d)
        #expect(endC.seedName == "END_LOST_NET" && endD.seedName == "END_LOST_NET")
        let waited = ContinuousClock.now - cutAt
        #expect(endC.seedName == "END_LOST_NET", "an idle session must survive on keepalive until the cut")
        #expect(waited > .seconds(1.5) && waited < .seconds(12), "\(waited)")  // 2 x 2 s from the last frame heard, up to 2 s before the cut
        for t in cuts.withLock({ $0 }) { await t.inner.close() }
    }

    @Test("the end is reported only once the last frame (CLOSED) is on the line: a process may exit at once")
    func endAfterFlush() async throws {
        let keys = try keyPair()
        let watched = Mutex<[Bool: WatchedTransport]>([:])
        let (ra, rb) = try await sessionPair(keys: keys) { t, initiator in
            let w = WatchedTransport(inner: t)
            watched.withLock { $0[initiator] = w }
            return w
        }
        let a = try ra.get(), b = try rb.get()
        await a.close()
        #expect(await b.receive() == .peerClosing)
        await b.close()
        #expect(await b.receive() == .ended(.otherUserQuit))
        #expect(watched.withLock { $0[false]! }.isClosed)
        #expect(await a.receive() == .ended(.userQuit(nil)))
        #expect(watched.withLock { $0[true]! }.isClosed)
    }

    @Test("a peer that stops reading stalls the sender: its sends suspend, memory stays bounded")
    func backPressure() async throws {
        let keys = try keyPair()
        let (ra, rb) = try await sessionPair(keys: keys)
        let a = try ra.get(), b = try rb.get()
        let sent = Atomic<Int>(0)
        let body = [UInt8](repeating: 7, count: 60_000)
        let sender = Task {
            for _ in 0..<400 {
                try await a.send(kind: 0x10, body: body)
                sent.add(1, ordering: .relaxed)
            }
        }
        // Wait (at most 30 s) until the count stops moving for a second.
        var stalled = -1
        for _ in 0..<30 {
            try await Task.sleep(for: .seconds(1))
            let now = sent.load(ordering: .relaxed)
            if now == stalled { break }
            stalled = now
        }
        // Bounded by our queue (256 KiB), the kernel's buffers (a few MiB) and the peer's queue (1 MiB).
        #expect(stalled < 250, "\(stalled) records of 60 kB left while the peer read nothing")
        #expect(stalled > 0)
        // Reading resumes the flow.
        let reader = Task { () -> Int in
            var n = 0
            while case .record = await b.receive() { n += 1; if n == 400 { break } }
            return n
        }
        try await sender.value
        #expect(await reader.value == 400)
        await a.close()
        await b.close()
    }

    @Test("the byte limit closes the session from the side that reached it")
    func byteLimit() async throws {
        let keys = try keyPair()
        let (ra, rb) = try await sessionPair(keys: keys, limitsA: SessionLimits(bytes: 10_000))
        let a = try ra.get(), b = try rb.get()
        let readerB = Task { await drain(b) }
        for _ in 0..<5 { try? await a.send(kind: 0x10, body: [UInt8](repeating: 1, count: 3000)) }
        let (_, endA) = await drain(a)
        let (gotB, endB) = await readerB.value
        guard case .userQuit(let detail) = endA else { Issue.record("\(endA)"); return }
        #expect(detail?.contains("byte limit") == true)
        #expect(endB == .otherUserQuit)
        #expect(gotB.count >= 4 && gotB.count <= 5)
    }
}
