#if canImport(Glibc)
import Glibc
#endif
import Clocks
import ModemCrypto
import ModemMessaging
import ModemRuntime
import ModemTransport
import ProcessTestSupport
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

/// A transport wrapper that counts the frames it received, so a test can wait for the peer's next frame.
final class CountingTransport: MessageTransport {
    let inner: any MessageTransport
    private let count = Atomic<Int>(0)
    /// The test clock, when given: the time each frame came up is noted (``lastFrameAt``).
    let clock: TestClock<Duration>?
    private let last = Mutex<TestClock<Duration>.Instant?>(nil)
    /// Bumped after each frame came up, when given: the event tests wait for.
    let changes: Observed<Int>?
    init(inner: any MessageTransport, clock: TestClock<Duration>? = nil, changes: Observed<Int>? = nil) {
        self.inner = inner
        self.clock = clock
        self.changes = changes
    }
    var received: Int { count.load(ordering: .acquiring) }
    /// The clock's time when the last frame came up (before the session read it), when a clock was given.
    var lastFrameAt: TestClock<Duration>.Instant? { last.withLock { $0 } }
    var kind: TransportKind { inner.kind }
    var maximumFrameSize: Int { inner.maximumFrameSize }
    func send(_ frame: [UInt8]) async throws(TransportError) { try await inner.send(frame) }
    func receive() async -> TransportInput {
        let input = await inner.receive()
        if case .frame = input {
            if let clock { last.withLock { $0 = clock.now } }
            count.add(1, ordering: .releasing)
            changes?.add(1)
        }
        return input
    }
    func close() async { await inner.close() }
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

/// Sessions on both ends of a loopback TCP connection. Their timers run on `clock`: by default a
/// manual clock nobody moves, so no handshake timeout or keepalive fires however slow the machine.
func sessionPair(keys: (KeyStore, KeyStore), keepalive: Double? = nil, limitsA: SessionLimits? = nil,
                 clock: TimerClock = TimerClock(TestClock()), userNames: (String, String) = ("alice", "bob"),
                 wrap: @escaping @Sendable (TCPTransport, Bool) -> any MessageTransport = { t, _ in t })
    async throws -> (Result<NoiseSession, SessionFailure>, Result<NoiseSession, SessionFailure>) {
    let listener = try TCPListener(host: "127.0.0.1", port: 0)
    defer { listener.close() }
    let optionsA = SessionOptions(userName: userNames.0, service: .mailbox, keepalive: keepalive, keys: keys.0, limits: limitsA ?? SessionLimits.none,
                                  clock: clock)
    let optionsB = SessionOptions(userName: userNames.1, service: .mailbox, keepalive: keepalive, keys: keys.1, limits: SessionLimits.none,
                                  clock: clock)
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
        #expect(a.peer == PeerIdentity(publicKey: try keys.1.publicKey(), trustedName: "bob", claimedName: "bob"))
        #expect(b.peer == PeerIdentity(publicKey: try keys.0.publicKey(), trustedName: "alice", claimedName: "alice"))
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

    @Test("a peer whose connection vanishes (RST) is END_OTHER_USER_LOST with no timer involved (the clock never moves)")
    func peerVanishes() async throws {
        let keys = try keyPair()
        let transports = Mutex<[TCPTransport]>([])
        let (ra, rb) = try await sessionPair(keys: keys, keepalive: 0.5) { t, initiator in
            if !initiator { transports.withLock { $0.append(t) } }
            return t
        }
        let a = try ra.get()
        _ = try rb.get()
        transports.withLock { $0[0] }.abort()  // the responder's socket, as if its process died
        let (_, end) = await drain(a)
        #expect(end.seedName == "END_OTHER_USER_LOST")
    }

    @Test("keepalive on a manual clock: an idle session lives through 5 keepalive periods; once the line is cut both ends are END_LOST_NET after 2 x keepalive of silence")
    func keepaliveAndSilence() async throws {
        let keys = try keyPair()
        let clock = TestClock()
        let changes = Observed(0)   // bumped by every frame that comes up and by every end: what the waits below wait for
        let counting = Mutex<[CountingTransport]>([])
        let cuts = Mutex<[CuttableTransport]>([])
        let (rc, rd) = try await sessionPair(keys: keys, keepalive: 2, clock: TimerClock(clock)) { t, _ in
            let cut = CuttableTransport(inner: t)
            cuts.withLock { $0.append(cut) }
            let c = CountingTransport(inner: cut, clock: clock, changes: changes)
            counting.withLock { $0.append(c) }
            return c
        }
        let c = try rc.get(), d = try rd.get()
        final class Ends: Sendable {
            let list = Mutex<[SessionEnd]>([])
            /// The clock's time when each end was seen (at or after the session reported it).
            let seen = Mutex<[TestClock<Duration>.Instant]>([])
        }
        let box = Ends()
        var drains: [Task<Void, Never>] = []
        for s in [c, d] {
            drains.append(Task {
                let (_, end) = await drain(s)
                box.seen.withLock { $0.append(clock.now) }
                box.list.withLock { $0.append(end) }
                changes.add(1)
            })
        }
        // Idle: each keepalive period, both ends hear a frame (PING or PONG) from the other; we wait for
        // those frames before moving the clock on, so the link is never silent for 2 periods.
        for _ in 0..<5 {
            let before = counting.withLock { $0.map(\.received) }
            for _ in 0..<8 { await clock.advance(by: .milliseconds(250)) }
            try await changes.wait(for: "keepalive frames") { _ in
                let now = counting.withLock { $0.map(\.received) }
                return zip(now, before).allSatisfy { $0 > $1 } || !box.list.withLock { $0.isEmpty }
            }
        }
        #expect(box.list.withLock { $0.isEmpty }, "an idle session must survive on keepalive: \(box.list.withLock { $0 })")
        // Cut: frames stop both ways; move the clock until both ends give up.
        for t in cuts.withLock({ $0 }) { t.cut.store(true, ordering: .relaxed) }
        // Each end may give up no sooner than 2 x keepalive (4 s) of clock time after the last frame it
        // heard (noted by its CountingTransport as the frame came up, so at or before the session's own
        // note of it), and is seen by its drain at or after it gave up: so the first end seen comes at
        // least 4 s after the earliest of the two last frames.
        let lastHeard = counting.withLock { $0.map { $0.lastFrameAt } }
        // The clock moves on until both ends gave up, however long the sessions take to notice (the
        // bound above holds for any pace); the wall-clock limit is a hang guard only.
        let hangGuard = ContinuousClock.now + .seconds(120)
        while box.list.withLock({ $0.count }) < 2 {
            try #require(ContinuousClock.now < hangGuard, "the ends did not give up within 120 s (a hang guard): \(box.list.withLock { $0 })")
            await clock.advance(by: .milliseconds(250))
            await Task.yield()
        }
        for task in drains { await task.value }
        let got = box.list.withLock { $0 }
        #expect(got.count == 2 && got.allSatisfy { $0.seedName == "END_LOST_NET" }, "\(got)")
        let heard = lastHeard.compactMap { $0 }
        #expect(heard.count == 2, "each end heard frames before the cut")
        if let earliestHeard = heard.min(), let firstSeen = box.seen.withLock({ $0.min() }) {
            #expect(earliestHeard.duration(to: firstSeen) >= .seconds(4),
                    "an end gave up \(earliestHeard.duration(to: firstSeen)) of clock time after the last frames, before 2 x keepalive")
        }
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
        let sent = Observed(0)
        let body = [UInt8](repeating: 7, count: 60_000)
        let sender = Task {
            for _ in 0..<400 {
                try await a.send(kind: 0x10, body: body)
                sent.add(1)
            }
        }
        // Wait until the first record is out, then until the count stops moving for a second (the
        // bounds below hold however slow the machine is: a slow sender only stops earlier).
        try await sent.wait(for: "the first record sent") { $0 > 0 }
        var stalled = -1
        for _ in 0..<120 {
            try await Task.sleep(for: .seconds(1))
            let now = sent.value
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
