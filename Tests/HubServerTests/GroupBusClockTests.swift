import Foundation
import HubCore
import HubServer
import HubStore
import HubTestSupport
import Logging
import ModemRuntime
import ProcessTestSupport
import Testing

/// The PostgreSQL bus batches the posts it carries to the other nodes for a window (10 ms) of its clock:
/// on a ``StepClock`` its NOTIFY leaves exactly when the test moves the clock past the window.
@Suite struct GroupBusClockTests {
    @Test("a post leaves for the other nodes when the bus's clock passes its 10 ms window, not before",
          .enabled(if: HubProcess.postgres.isAvailable || Peer.areRequired, "no PostgreSQL cluster: set HUB_TEST_POSTGRES_URL"))
    func flushWindowIsOnTheClock() async throws {
        guard let url = try await HubProcess.freshPostgresDatabase(prefix: "hubbusclock_") else { return }
        var logger = Logger(label: "bus-clock")
        logger.logLevel = .error
        let store = try await SQLHubStore.open(.postgres(url: url), logger: logger, nowMs: 0)
        let engine = try #require(store.db as? PostgresEngine)
        let clock = StepClock()
        let bus = PostgresGroupBus(fanout: GroupFanout(),
                                   notifications: PostgresNotifications(channel: "hub_groups", engine: engine, logger: logger),
                                   origin: "n1-a", logger: logger, timers: TimerClock(clock))

        // Another node's ear on the bus's channel (`hub_groups`), up once its LISTEN is (the notifications' state); a probe
        // through it shows the way works.
        let ear = PostgresNotifications(channel: "hub_groups", engine: engine, logger: logger)
        let up = Observed(false)
        let heard = Observed<[String]>([])
        let listening = Task { await ear.listen(state: { up.set($0) }) { heard.append($0) } }
        try await up.wait(for: "the LISTEN to be up") { $0 }
        try await ear.send(["probe"], storing: [], origin: "probe") { _ in "" }
        try await heard.wait(for: "the probe") { $0 == ["probe"] }
        heard.set([])

        let running = Task { await bus.run() }
        try await clock.waitForSleepers(1, "the prune loop asleep")
        #expect(clock.state.value.deadlines == [.seconds(60)])
        let post = GroupPost(group: "g", pid: "p1", user: "u", pidload: JSONObjectText(stored: #"{"n":1}"#), timestamp: 1)
        bus.publish(GroupEvent.post(post), excluding: nil)
        try await clock.waitForSleepers(2, "the flush window open")
        #expect(clock.state.value.deadlines == [.milliseconds(10), .seconds(60)])
        clock.advance(by: .milliseconds(9))
        #expect(clock.state.value.deadlines == [.milliseconds(10), .seconds(60)], "the window closed early")
        #expect(heard.value.isEmpty)
        clock.advance(by: .milliseconds(1))
        let got = try await heard.wait(for: "the post's NOTIFY") { !$0.isEmpty }
        #expect(got.count == 1 && got[0].hasPrefix("n1-a\u{1E}") && got[0].contains("p1"), "\(got)")

        running.cancel()
        listening.cancel()
        await running.value
        await listening.value
        try await store.db.close()
    }
}
