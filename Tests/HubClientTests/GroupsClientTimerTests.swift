import HubClient
import HubTestSupport
import Hummingbird
import HummingbirdWebSocket
import Logging
import ModemRuntime
import ProcessTestSupport
import Testing

/// The groups socket's two timers (the wait for hello, `close()`'s wait for the end) on a ``StepClock``
/// against a stand-in hub that upgrades and then stays silent: each gives up exactly when the test
/// moves the clock past its limit, never by the machine's time. (The WebSocket library's own wait for
/// the hub's close frame, 15 s of real time, is far beyond these tests: it could only fail them.)
@Suite struct GroupsClientTimerTests {
    /// A hub on a free port of 127.0.0.1 that upgrades every WebSocket, says hello only if `hello`, and
    /// then neither reads nor writes (a close frame goes unanswered) until `body` returns.
    static func withSilentHub(hello: Bool, _ body: (_ base: String) async throws -> Void) async throws {
        let (release, releaseSink) = AsyncStream<Void>.makeStream()
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "silent-hub")
        logger.logLevel = .critical
        let app = Application(
            router: Router(),
            server: .http1WebSocketUpgrade { _, _, _ in
                .upgrade([:]) { _, outbound, _ in
                    if hello { try await outbound.write(.text(#"{"type":"hello","user":"d_silent"}"#)) }
                    for await _ in release {}
                }
            },
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                portSink.yield(channel.localAddress?.port ?? 0)
                portSink.finish()
            },
            logger: logger)
        let running = Task { try await app.run() }
        var failure: (any Error)?
        do {
            var it = ports.makeAsyncIterator()
            let port = try #require(await it.next())
            try await body("http://127.0.0.1:\(port)")
        } catch {
            failure = error
        }
        releaseSink.finish()
        running.cancel()
        _ = try? await running.value
        if let failure { throw failure }
    }

    @Test("connect gives up on a hub that never says hello when its clock passes 15 s, not before")
    func helloWaitIsOnTheClock() async throws {
        try await Self.withSilentHub(hello: false) { base in
            let clock = StepClock()
            let connecting = Task {
                try await HubGroupsConnection.connect(baseURL: base, accessToken: "mha_any", clock: TimerClock(clock))
            }
            try await clock.waitForSleepers(1, "the wait for hello")
            #expect(clock.state.value.deadlines == [.seconds(15)])
            clock.advance(by: .milliseconds(14_999))
            #expect(clock.state.value.deadlines == [.seconds(15)], "the wait ended before its 15 s")
            clock.advance(by: .milliseconds(1))
            do {
                _ = try await connecting.value
                Issue.record("connected without a hello")
            } catch let e as HubClientError {
                guard case .socketClosed(let why) = e else { Issue.record("got \(e)"); return }
                #expect(why.contains("no hello from the hub within 15 s"), "\(why)")
            }
        }
    }

    @Test("close() stops waiting for a socket stuck behind a hub that reads nothing when its clock passes 5 s")
    func closeWaitIsOnTheClock() async throws {
        try await Self.withSilentHub(hello: true) { base in
            let clock = StepClock()
            let connection = try await HubGroupsConnection.connect(baseURL: base, accessToken: "mha_any", clock: TimerClock(clock))
            #expect(connection.user == "d_silent")
            // The hello's timer was cancelled when hello came: nobody sleeps on the clock.
            try await clock.waitForSleepers(0, "the hello timer's end")
            // 40 MB of posts to a hub that reads nothing: far more than the socket buffers on both ends
            // and the writer's own hold, so the socket's writer is stuck for good before it reaches the
            // close frame, and its task cannot end until close() gives up on it.
            let filler = HubJSON.string(String(repeating: "x", count: 15_000))   // under the hub's 16 KB frames
            for i in 0..<2_700 { try connection.post(group: "g", pid: "p\(i)", pidload: ["x": filler]) }
            let closed = Observed(false)
            let closing = Task {
                await connection.close()
                closed.set(true)
            }
            try await clock.waitForSleepers(1, "close()'s wait for the end")
            #expect(clock.state.value.deadlines == [.seconds(5)])
            clock.advance(by: .milliseconds(4_999))
            #expect(!closed.value && clock.state.value.deadlines == [.seconds(5)], "close() returned before its 5 s")
            clock.advance(by: .milliseconds(1))
            try await closed.wait(for: "close() to return") { $0 }
            await closing.value
        }
    }
}
