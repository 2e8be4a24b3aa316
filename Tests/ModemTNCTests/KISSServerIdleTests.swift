import Foundation
import ModemTNC
import ModemTestSupport
import Testing

/// Idle connections must not lock other clients out of the KISS server.
@Suite("KISS server: idle clients")
struct KISSServerIdleTests {
    @Test("A client silent past the idle timeout is disconnected; the others stay")
    func idleTimeout() throws {
        let server = try KISSServer(host: "127.0.0.1", port: 0, idleTimeoutSeconds: 0.4)
        let idle = try KISSTestClient(port: server.port)
        let busy = try KISSTestClient(port: server.port)
        let deadline = Date().addingTimeInterval(3)
        var events: [KISSServerEvent] = []
        while Date() < deadline, !idle.closedByServer {
            // The busy client keeps talking: a KISS data frame now and then.
            try busy.send([0xC0, 0x00, 0x41, 0xC0])
            events += try server.poll(timeoutMilliseconds: 20)
            idle.receive()
            busy.receive()
        }
        #expect(idle.closedByServer, "the idle client was not disconnected: \(events)")
        #expect(!busy.closedByServer)
        #expect(server.connectedClients.count == 1)
        #expect(server.clientsDroppedAsIdle == 1)
        #expect(events.contains { if case .disconnected(_, .idle, _) = $0 { true } else { false } }, "\(events)")
        server.close()
    }

    @Test("Full of idle clients, the server gives the longest idle one's place to a newcomer")
    func idleClientsDoNotStarveNewOnes() throws {
        let server = try KISSServer(host: "127.0.0.1", port: 0, maximumClients: 2, evictionIdleSeconds: 0.3)
        let a = try KISSTestClient(port: server.port)
        let b = try KISSTestClient(port: server.port)
        _ = try tncPump(server, clients: [a, b], seconds: 2) { _ in server.connectedClients.count == 2 }
        Thread.sleep(forTimeInterval: 0.5)
        let c = try KISSTestClient(port: server.port)
        let events = try tncPump(server, clients: [a, b, c], seconds: 3) { _ in a.closedByServer || b.closedByServer }
        #expect(!c.closedByServer, "the newcomer was refused: \(events)")
        #expect(a.closedByServer, "the longest idle client (the first) kept its place: \(events)")
        #expect(server.connectedClients.count == 2)
        #expect(server.clientsRefused == 0)
        #expect(server.broadcast(.data([1])) == 2)
        server.close()
    }

    @Test("Clients that are not idle keep their places: the newcomer is refused")
    func busyClientsKeepTheirPlaces() throws {
        let server = try KISSServer(host: "127.0.0.1", port: 0, maximumClients: 1, evictionIdleSeconds: 30)
        let a = try KISSTestClient(port: server.port)
        _ = try tncPump(server, clients: [a], seconds: 2) { _ in server.connectedClients.count == 1 }
        let b = try KISSTestClient(port: server.port)
        let events = try tncPump(server, clients: [a, b], seconds: 3) { _ in b.closedByServer }
        #expect(b.closedByServer, "\(events)")
        #expect(!a.closedByServer)
        #expect(server.clientsRefused == 1)
        server.close()
    }
}
