import Foundation
@testable import ModemMessaging
import Testing

/// What a trusted peer with a session can make the data-connection layer hold (issue 32: every
/// resource a peer can claim has a bound): offers and ends without end, channel opens past the cap,
/// and events while the application does not read them.
@Suite("Data connections: bounds on what a peer can make us hold")
struct DataConnectionBoundsTests {
    /// Before: every connection a peer ever offered stayed in the machine (ended ones with their
    /// channel tables), so 20,000 offers and ends held 20,000 entries. Now at most
    /// `maximumConnections` live plus `maximumEndedConnections` remembered.
    @Test("20,000 offers and ends from a peer: the machine holds at most the live cap plus the remembered ended ones")
    func endedConnectionsAreForgotten() {
        var m = ConnectionStateMachine()
        for n in UInt32(1)...20_000 {
            _ = m.input(kind: DataRecordKind.offer, body: DataMessage.offer(conn: n, metadata: []).encoded().body)
            _ = m.input(kind: DataRecordKind.end, body: DataMessage.end(conn: n, reason: .none).encoded().body)
        }
        #expect(m.heldConnections <= m.maximumConnections + m.maximumEndedConnections, "\(m.heldConnections) held")
        // Offers beyond the live cap (never ended by the peer) are refused and forgotten the same way.
        var refused = 0
        for n in UInt32(30_000)..<UInt32(40_000) {
            let actions = m.input(kind: DataRecordKind.offer, body: DataMessage.offer(conn: n, metadata: []).encoded().body)
            if actions.contains(where: { if case .event(.refused) = $0 { true } else { false } }) { refused += 1 }
        }
        #expect(refused == 10_000 - m.maximumConnections)
        #expect(m.heldConnections <= m.maximumConnections + m.maximumEndedConnections, "\(m.heldConnections) held")
        // A recent end is still known as such.
        #expect(m.state(of: ConnectionID(local: false, number: 39_999)) == .ended(.tooLarge))
    }

    /// Before: a channel refused over `maximumChannels` was remembered (closed), so one connection
    /// held up to 32,767 channels, and an ended connection kept its whole table.
    @Test("channel opens past the cap are refused and not remembered; an ended connection keeps no channels")
    func refusedChannelsAreNotHeld() throws {
        var m = ConnectionStateMachine()
        _ = m.input(kind: DataRecordKind.offer, body: DataMessage.offer(conn: 1, metadata: []).encoded().body)
        let id = ConnectionID(local: false, number: 1)
        _ = try m.accept(id)
        var refusals = 0
        for ch in UInt16(1)...5000 {
            let (k, body) = DataMessage.channelOpen(conn: 1, channel: ch, kind: .stream, size: 0, blockSize: 0,
                                                   fileKey: [UInt8](repeating: 0, count: 16), description: "", name: "").encoded()
            let actions = m.input(kind: k, body: body)
            if actions.contains(where: { if case .send(DataRecordKind.channelResult, _) = $0 { true } else { false } }) { refusals += 1 }
        }
        #expect(refusals == 5000 - m.maximumChannels)
        #expect(m.heldChannels(of: id) == m.maximumChannels)
        _ = m.end(id)
        #expect(m.heldChannels(of: id) == 0)
    }

    /// Before: control events (offers, refusals, ends) were queued without bound while the
    /// application did not read events: a peer that offered without end and read our refusals grew
    /// the queue by one event per offer. Now the loop stops reading the session at 1,024 unread
    /// events (the peer's sends then wait on the session), and resumes as they are read, losing none.
    @Test("a peer's 3,000 offers while the application reads no events: at most 1,024 are queued, none is lost")
    func unreadEventsHoldBackThePeer() async throws {
        let (raw, sb) = InMemorySessionLine.pair(capacity: 16)
        let b = DataConnections(session: sb)
        let total = 3000
        // The peer reads every answer (so our control queue never fills) and offers without end.
        let drain = Task {
            while true {
                switch await raw.receive() {
                case .record: continue
                case .peerClosing: await raw.close()
                case .ended: return
                }
            }
        }
        let flood = Task {
            for n in UInt32(1)...UInt32(total) {
                let (k, body) = DataMessage.offer(conn: n, metadata: []).encoded()
                do throws(SessionSendError) { try await raw.send(kind: k, body: body) } catch { return }
            }
        }
        // Wait for one of two things: the loop pausing for the reader, or the queue passing the bound.
        // The connection's state gives no event, so this polls it, bounded by a hang guard of 120 s.
        let hangGuard = ContinuousClock.now + .seconds(120)
        while true {
            let (paused, unread) = (await b.readingPaused, await b.unreadEvents)
            if paused || unread > 1024 { break }
            try #require(ContinuousClock.now < hangGuard, "the reader did not pause nor the queue pass 1024 within 120 s (a hang guard)")
            try await Task.sleep(for: .milliseconds(5))
        }
        let queued = await b.unreadEvents
        #expect(queued <= 1024, "\(queued) events queued unread")
        // Reading the events lets the rest through: every offer is reported (offered or refused).
        var reported = 0
        for await event in b.events {
            switch event {
            case .offered, .refused: reported += 1
            default: break
            }
            if reported == total { break }
        }
        #expect(reported == total)
        await flood.value
        await b.close()
        await drain.value
    }
}
