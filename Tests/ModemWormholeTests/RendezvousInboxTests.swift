@testable import ModemWormhole
import Testing

/// What a hostile rendezvous server (or a partner, through it) can make the client hold before it is
/// asked for (issue 32: every resource a stranger can claim has a bound). Before, the client held up
/// to 1,000 relayed messages of up to 1 MiB each (about 1 GiB) and dropped answers past 1,000 silently.
@Suite struct RendezvousInboxTests {
    static let big = 1 << 20  // the largest WebSocket message the client takes

    @Test("relayed messages are bounded in bytes: the ninth 1 MiB message not yet asked for ends the connection")
    func messagesBoundedInBytes() throws {
        var inbox = RendezvousInbox()
        let m = MailboxMessage(side: "s", phase: "0", body: [UInt8](repeating: 1, count: 16))
        for _ in 0..<8 { try inbox.hold(m, size: Self.big) }
        #expect(throws: WormholeError.self) { try inbox.hold(m, size: Self.big) }
        #expect(inbox.bytes <= RendezvousInbox.maximumBytes)
        // Taking one makes room again: the bound is on what is held, not on what ever came.
        #expect(inbox.nextMessage() == m)
        try inbox.hold(m, size: Self.big)
        #expect(inbox.messageCount == 8)
    }

    @Test("answers nobody asked for: bounded in bytes and number, and refused aloud instead of dropped")
    func answersBounded() throws {
        var inbox = RendezvousInbox()
        for _ in 0..<RendezvousInbox.maximumQueued { try inbox.hold(answer: ["type": "nameplates"], size: 30) }
        #expect(throws: WormholeError.self) { try inbox.hold(answer: ["type": "nameplates"], size: 30) }
        var big = RendezvousInbox()
        for _ in 0..<8 { try big.hold(answer: ["type": "x"], size: Self.big) }
        #expect(throws: WormholeError.self) { try big.hold(answer: ["type": "x"], size: Self.big) }
        #expect(big.nextAnswer()?["type"]?.string == "x")
        #expect(big.bytes == 7 * Self.big)
    }
}

/// The partner's messages ahead of their turn (a hostile wormhole partner): before, 1,000 of them of
/// any size were held (about 500 MiB through the 1 MiB WebSocket bound), and during the key exchange
/// those past 1,000 were dropped silently.
@Suite struct HeldPhasesTests {
    @Test("messages ahead are bounded in bytes and number; more is refused, not dropped; taking one makes room")
    func bounded() throws {
        var held = HeldPhases()
        let half = [UInt8](repeating: 7, count: 512 << 10)
        for p in 1...16 { try held.hold(phase: p, half) }
        #expect(throws: WormholeError.self) { try held.hold(phase: 17, half) }
        #expect(held.bytes <= HeldPhases.maximumBytes)
        try held.hold(phase: 3, half)  // the same phase again replaces it
        #expect(held.take(phase: 1) == half)
        try held.hold(phase: 17, half)
        var many = HeldPhases()
        for p in 0..<HeldPhases.maximumCount { try many.hold(phase: p, [1]) }
        #expect(throws: WormholeError.self) { try many.hold(phase: HeldPhases.maximumCount, [1]) }
    }
}
