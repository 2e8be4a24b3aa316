import HubClient
import HubTestSupport
import Hummingbird
import HummingbirdWebSocket
import Logging
import ModemRuntime
import ProcessTestSupport
import Testing

/// The groups socket's wait for hello on a ``StepClock`` against a stand-in hub that upgrades and then
/// stays silent: connect gives up exactly when the test moves the clock past 15 s, never by the
/// machine's time. (`close()`'s wait for the end, 5 s, runs on the same clock but has no test here:
/// keeping the socket's writer stuck took 40 MB of posts, whose masking in the debug build held the
/// process's shared event loops for seconds and made the other hub client tests time out.)
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
}
