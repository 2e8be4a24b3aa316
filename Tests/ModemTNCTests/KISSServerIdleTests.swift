import Clocks
import Foundation
import ModemTNC
import ModemTestSupport
import Testing

/// Idle connections must not lock other clients out of the KISS server.
@Suite("KISS server: idle clients")
struct KISSServerIdleTests {
    @Test("A client silent past the idle timeout is disconnected; the others stay (a manual clock: time moves only when the test says)")
    func idleTimeout() async throws {
        let clock = TestClock()
        let server = try KISSServer(host: "127.0.0.1", port: 0, idleTimeoutSeconds: 0.4, clock: clock)
        let idle = try KISSTestClient(port: server.port)
        let busy = try KISSTestClient(port: server.port)
        var events = try tncPump(server, clients: [idle, busy], seconds: 120) { _ in server.connectedClients.count == 2 }
        // Each round the busy client sends a frame, the server takes it, then 0.1 s pass: the idle
        // client is dropped in the round that takes the clock past 0.4 s, the busy one never.
        for round in 1...10 where !idle.closedByServer {
            try busy.send([0xC0, 0x00, 0x41, 0xC0])
            events += try tncPump(server, clients: [idle, busy], seconds: 120) { e in
                e.contains { if case .frame = $0 { true } else { false } }
            }
            await clock.advance(by: .milliseconds(100))
            events += try tncPump(server, clients: [idle, busy], seconds: round >= 4 ? 120 : 0) { _ in idle.closedByServer }
        }
        #expect(idle.closedByServer, "the idle client was not disconnected: \(events)")
        #expect(!busy.closedByServer)
        #expect(server.connectedClients.count == 1)
        #expect(server.clientsDroppedAsIdle == 1)
        #expect(events.contains { if case .disconnected(_, .idle, _) = $0 { true } else { false } }, "\(events)")
        server.close()
    }

    @Test("Full of idle clients, the server gives the longest idle one's place to a newcomer (a manual clock)")
    func idleClientsDoNotStarveNewOnes() async throws {
        let clock = TestClock()
        let server = try KISSServer(host: "127.0.0.1", port: 0, maximumClients: 2, evictionIdleSeconds: 0.3, clock: clock)
        let a = try KISSTestClient(port: server.port)
        _ = try tncPump(server, clients: [a], seconds: 120) { _ in server.connectedClients.count == 1 }
        await clock.advance(by: .milliseconds(100))  // a connected first: it is the longest idle
        let b = try KISSTestClient(port: server.port)
        _ = try tncPump(server, clients: [a, b], seconds: 120) { _ in server.connectedClients.count == 2 }
        await clock.advance(by: .milliseconds(500))
        let c = try KISSTestClient(port: server.port)
        let events = try tncPump(server, clients: [a, b, c], seconds: 120) { _ in a.closedByServer || b.closedByServer }
        _ = try tncPump(server, clients: [a, b, c], seconds: 120) { _ in server.connectedClients.count == 2 }
        #expect(!c.closedByServer, "the newcomer was refused: \(events)")
        #expect(a.closedByServer, "the longest idle client (the first) kept its place: \(events)")
        #expect(!b.closedByServer)
        #expect(server.connectedClients.count == 2)
        #expect(server.clientsRefused == 0)
        #expect(server.broadcast(.data([1])) == 2)
        server.close()
    }

    @Test("Clients that are not idle keep their places: the newcomer is refused")
    func busyClientsKeepTheirPlaces() throws {
        let server = try KISSServer(host: "127.0.0.1", port: 0, maximumClients: 1, evictionIdleSeconds: 30)
        let a = try KISSTestClient(port: server.port)
        _ = try tncPump(server, clients: [a], seconds: 120) { _ in server.connectedClients.count == 1 }
        let b = try KISSTestClient(port: server.port)
        let events = try tncPump(server, clients: [a, b], seconds: 120) { _ in b.closedByServer }
        #expect(b.closedByServer, "\(events)")
        #expect(!a.closedByServer)
        #expect(server.clientsRefused == 1)
        server.close()
    }
}
