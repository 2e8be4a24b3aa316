import Foundation
import HubServer
import Synchronization
import ProcessTestSupport
import Testing

/// The magic-wormhole rendezvous's rules as values, and stock magic-wormhole clients through
/// modem-hub's own rendezvous and transit relay (Tests/scripts/transit_wormhole.py --rendezvous hub).
@Suite struct WormholeRendezvousTests {
    @Test func nameplatesMailboxesAndTheirRules() throws {
        let r = WormholeRendezvous(maximumNameplates: 3, maximumMailboxes: 10, maximumMessages: 2, idleSeconds: 100)
        let n1 = try r.allocate(app: "app", side: "a", now: 0)
        #expect(n1 == "1")
        #expect(try r.allocate(app: "app", side: "x", now: 0) == "2")           // the smallest free number
        #expect(try r.allocate(app: "other", side: "x", now: 0) == "1")         // per application
        #expect(r.nameplates(app: "app") == ["1", "2"])
        let m = try r.claim(app: "app", nameplate: n1, side: "b", now: 1)
        #expect(try r.claim(app: "app", nameplate: n1, side: "a", now: 1) == m)  // the allocator's claim: same mailbox
        #expect(throws: RendezvousRefusal.crowded) { try r.claim(app: "app", nameplate: n1, side: "c", now: 1) }
        #expect(throws: RendezvousRefusal.badRequest("nameplate must be digits")) { try r.claim(app: "app", nameplate: "x1", side: "c", now: 1) }
        #expect(throws: RendezvousRefusal.serverFull("the server has no room for another nameplate")) {
            try r.claim(app: "app", nameplate: "77", side: "c", now: 1)
        }
        r.release(app: "app", nameplate: n1, side: "a", now: 2)
        #expect(throws: RendezvousRefusal.reclaimed) { try r.claim(app: "app", nameplate: n1, side: "a", now: 2) }
        r.release(app: "app", nameplate: n1, side: "b", now: 2)
        #expect(r.nameplates(app: "app") == ["2"])                              // freed when both released

        // Listeners get what came before, then every message, their own included.
        let seen = Mutex<[String]>([])
        try r.add(app: "app", mailbox: m, message: WormholeMessage(side: "a", phase: "pake", body: "00", serverRx: 3, id: "i1"))
        let h = try r.open(app: "app", mailbox: m, side: "b", now: 3) { msg in seen.withLock { $0.append(msg.side + msg.phase) } }
        try r.add(app: "app", mailbox: m, message: WormholeMessage(side: "b", phase: "pake", body: "01", serverRx: 4, id: nil))
        #expect(seen.withLock { $0 } == ["apake", "bpake"])
        #expect(throws: RendezvousRefusal.mailboxFull("this mailbox holds 2 messages already")) {
            try r.add(app: "app", mailbox: m, message: WormholeMessage(side: "a", phase: "0", body: "", serverRx: 5, id: nil))
        }
        #expect(throws: RendezvousRefusal.crowded) { try r.open(app: "app", mailbox: m, side: "c", now: 5) { _ in } }
        r.stopListening(app: "app", mailbox: m, handle: h)
        // The mailbox goes when both sides that opened it closed it.
        try r.close(app: "app", mailbox: m, side: "a", now: 6)
        try r.close(app: "app", mailbox: m, side: "b", now: 6)
        #expect(throws: RendezvousRefusal.noSuchMailbox) {
            try r.add(app: "app", mailbox: m, message: WormholeMessage(side: "a", phase: "0", body: "", serverRx: 7, id: nil))
        }
        // At most maximumMailboxBytes of bodies per mailbox.
        let small = WormholeRendezvous(maximumMailboxBytes: 10)
        let mb = try small.claim(app: "app", nameplate: "5", side: "a", now: 0)
        try small.add(app: "app", mailbox: mb, message: WormholeMessage(side: "a", phase: "pake", body: "0123456789", serverRx: 1, id: nil))
        #expect(throws: RendezvousRefusal.mailboxFull("this mailbox holds 10 bytes of messages already")) {
            try small.add(app: "app", mailbox: mb, message: WormholeMessage(side: "a", phase: "version", body: "0", serverRx: 2, id: nil))
        }
        // Idle nameplates and mailboxes expire.
        let gone = r.expire(now: 1000)
        #expect(gone.nameplates == 2 && r.nameplates(app: "app").isEmpty && r.nameplates(app: "other").isEmpty)
    }

    static func message(_ body: String, at t: Double = 1) -> WormholeMessage {
        WormholeMessage(side: "a", phase: "p", body: body, serverRx: t, id: nil)
    }

    @Test("each refusal is a case with the protocol's error text: the reference server's words, or one naming the bound")
    func refusalTexts() {
        #expect(RendezvousRefusal.crowded.description == "crowded")
        #expect(RendezvousRefusal.reclaimed.description == "reclaimed")
        #expect(RendezvousRefusal.noSuchMailbox.description == "no such mailbox")
        #expect(RendezvousRefusal.databaseFailed.description == "the server's database failed; try again")
        #expect(RendezvousRefusal.badRequest("missing 'phase'").description == "missing 'phase'")
        #expect(RendezvousRefusal.mailboxFull("this mailbox holds 2 messages already").description == "this mailbox holds 2 messages already")
        // The limiter's refusals are bounds per address, or the server's in all when its table is full.
        let lim = WormholeAddressLimiter(maximumLiveAllocations: 1)
        #expect(throws: Never.self) { try lim.allow(.allocate, from: "127.0.0.9", now: 0) }
        #expect(throws: RendezvousRefusal.addressLimit("too many nameplates allocated from your address at once; release some first")) {
            try lim.allow(.allocate, from: "127.0.0.9", now: 0)
        }
    }

    @Test("nameplates one address created and still exist are bounded; released ones give the room back; others unaffected")
    func nameplatesPerAddress() throws {
        var l = WormholeLimits()
        l.maximumNameplatesPerAddress = 2
        let r = WormholeRendezvous(limits: l)
        let n1 = try r.allocate(app: "a", side: "s1", now: 0, address: "127.0.0.2")
        _ = try r.claim(app: "a", nameplate: "500", side: "s2", now: 0, address: "127.0.0.2")
        #expect(throws: RendezvousRefusal.addressLimit("too many nameplates held by your address (2); release some first")) {
            try r.claim(app: "b", nameplate: "501", side: "s3", now: 0, address: "127.0.0.2")
        }
        #expect(throws: RendezvousRefusal.addressLimit("too many nameplates held by your address (2); release some first")) {
            try r.allocate(app: "a", side: "s4", now: 0, address: "127.0.0.2")
        }
        // Claiming one that exists creates nothing; 127.0.0.1 has its own share.
        _ = try r.claim(app: "a", nameplate: "500", side: "s5", now: 0, address: "127.0.0.2")
        _ = try r.allocate(app: "a", side: "h1", now: 0, address: "127.0.0.1")
        #expect(r.holding(of: "127.0.0.2").nameplates == 2 && r.holding(of: "127.0.0.1").nameplates == 1)
        r.release(app: "a", nameplate: n1, side: "s1", now: 1)
        #expect(r.holding(of: "127.0.0.2").nameplates == 1)
        _ = try r.claim(app: "b", nameplate: "501", side: "s3", now: 1, address: "127.0.0.2")
        // Expiry gives the room back too.
        r.expire(now: l.idleSeconds + 10)
        #expect(r.holding(of: "127.0.0.2") == (0, 0, 0) && r.holding(of: "127.0.0.1") == (0, 0, 0))
    }

    @Test("mailboxes one address created and still exist are bounded; closed ones give the room back")
    func mailboxesPerAddress() throws {
        var l = WormholeLimits()
        l.maximumMailboxesPerAddress = 2
        let r = WormholeRendezvous(limits: l)
        _ = try r.open(app: "a", mailbox: "m1", side: "s", now: 0, address: "127.0.0.2") { _ in }
        _ = try r.open(app: "a", mailbox: "m2", side: "s", now: 0, address: "127.0.0.2") { _ in }
        #expect(throws: RendezvousRefusal.addressLimit("too many mailboxes held by your address (2); close some first")) {
            try r.open(app: "a", mailbox: "m3", side: "s", now: 0, address: "127.0.0.2") { _ in }
        }
        // A claim that would make a nameplate and its mailbox is refused as well.
        #expect(throws: RendezvousRefusal.addressLimit("too many mailboxes held by your address (2); close some first")) {
            try r.claim(app: "a", nameplate: "9", side: "s", now: 0, address: "127.0.0.2")
        }
        #expect(r.nameplates(app: "a").isEmpty, "nothing half made")
        _ = try r.open(app: "a", mailbox: "m3", side: "s", now: 0, address: "127.0.0.1") { _ in }
        try r.close(app: "a", mailbox: "m1", side: "s", now: 1)
        #expect(r.holding(of: "127.0.0.2").mailboxes == 1)
        _ = try r.open(app: "a", mailbox: "m4", side: "s", now: 1, address: "127.0.0.2") { _ in }
    }

    @Test("bytes one address added over every mailbox, and bytes in all, are bounded; `add` is refused past them")
    func bytesPerAddressAndInAll() throws {
        var l = WormholeLimits()
        l.maximumMailboxBytes = 100
        l.maximumBytesPerAddress = 150
        l.maximumTotalBytes = 250
        let r = WormholeRendezvous(limits: l)
        for m in ["m1", "m2", "m3", "m4"] { _ = try r.open(app: "a", mailbox: m, side: "s", now: 0, address: "x") { _ in } }
        let body80 = String(repeating: "a", count: 80), body70 = String(repeating: "a", count: 70)
        try r.add(app: "a", mailbox: "m1", message: Self.message(body80), address: "127.0.0.2")
        #expect(throws: RendezvousRefusal.mailboxFull("this mailbox holds 100 bytes of messages already")) {
            try r.add(app: "a", mailbox: "m1", message: Self.message(body80), address: "127.0.0.2")
        }
        try r.add(app: "a", mailbox: "m2", message: Self.message(body70), address: "127.0.0.2")   // 150: at the bound
        #expect(throws: RendezvousRefusal.addressLimit("too many bytes of messages held by your address (150); close some mailboxes first")) {
            try r.add(app: "a", mailbox: "m3", message: Self.message("b"), address: "127.0.0.2")
        }
        try r.add(app: "a", mailbox: "m3", message: Self.message(body80), address: "127.0.0.1")  // 230 in all
        #expect(throws: RendezvousRefusal.serverFull("the server holds too many bytes of messages (250); try again later")) {
            try r.add(app: "a", mailbox: "m4", message: Self.message(body80), address: "192.0.2.1")
        }
        #expect(r.totalBytes == 230 && r.holding(of: "127.0.0.2").bytes == 150)
        // A mailbox closed by every side that opened it gives its bytes back to whoever added them.
        try r.close(app: "a", mailbox: "m1", side: "s", now: 1)
        #expect(r.totalBytes == 150 && r.holding(of: "127.0.0.2").bytes == 70)
        try r.add(app: "a", mailbox: "m4", message: Self.message(body80), address: "127.0.0.2")
    }

    @Test("what each address holds survives a restart (kept with the records)")
    func holdingsAreRestored() throws {
        let r = WormholeRendezvous()
        let mb = try r.claim(app: "a", nameplate: "7", side: "s", now: 0, address: "127.0.0.2")
        try r.add(app: "a", mailbox: mb, message: Self.message("abcd"), address: "127.0.0.2")
        let again = WormholeRendezvous()
        again.restore(r.takeChanges().changes)
        #expect(again.holding(of: "127.0.0.2") == (1, 1, 4) && again.totalBytes == 4)
    }

    @Test("the limiter's memory is bounded without forgiving an address at its limit")
    func limiterEvictionDoesNotForgive() throws {
        let lim = WormholeAddressLimiter(maximumLiveAllocations: 1000, maximumAllocationsPerWindow: 5, maximumClaimsPerWindow: 5,
                                         windowSeconds: 600, maximumAddresses: 64)
        for _ in 0..<5 { try lim.allow(.allocate, from: "127.0.0.2", now: 0) }
        #expect(throws: RendezvousRefusal.addressLimit("too many allocations from your address; try again later")) {
            try lim.allow(.allocate, from: "127.0.0.2", now: 1)
        }
        for _ in 0..<5 { try lim.allow(.claim, from: "127.0.0.3", now: 0) }  // at its limit, holding nothing
        for a in ["127.0.0.2", "127.0.0.3"] { lim.allocationEnded(from: a) }
        // A flood of new addresses, many times the table: memory stays bounded.
        for i in 0..<10_000 { try lim.allow(.claim, from: "10.0.\(i / 256).\(i % 256)", now: 2) }
        #expect(lim.trackedAddresses <= 64)
        // The attackers are still at their limits (before the fix, the table was cleared past 65,536 addresses).
        #expect(throws: RendezvousRefusal.addressLimit("too many allocations from your address; try again later")) {
            try lim.allow(.allocate, from: "127.0.0.2", now: 3)
        }
        #expect(throws: RendezvousRefusal.addressLimit("too many claims from your address; try again later")) {
            try lim.allow(.claim, from: "127.0.0.3", now: 3)
        }
        // Once its window has passed, it is allowed again.
        try lim.allow(.allocate, from: "127.0.0.2", now: 700)
    }

    @Test("a refused allocation gives its count back: refusals use up none of an address's live allocations")
    func refusedAllocationsGiveTheirCountBack() async throws {
        var l = WormholeLimits()
        l.maximumNameplatesPerAddress = 1
        let r = WormholeRendezvous(limits: l)
        let lim = WormholeAddressLimiter(maximumLiveAllocations: 4, maximumAllocationsPerWindow: 1000, maximumClaimsPerWindow: 1000,
                                         windowSeconds: 600, maximumAddresses: 64)
        func allocate(_ side: String, at now: Double) async throws(RendezvousRefusal) -> String {
            try await lim.allocating(from: "127.0.0.2", now: now) { () throws(RendezvousRefusal) in
                try r.allocate(app: "a", side: side, now: now, address: "127.0.0.2")
            }
        }
        let first = try await allocate("s0", at: 0)
        // Its one nameplate held: the rendezvous refuses every further allocation, far more than 4 of them.
        for i in 1...20 {
            await #expect(throws: RendezvousRefusal.addressLimit("too many nameplates held by your address (1); release some first")) {
                try await allocate("s\(i)", at: 1)
            }
        }
        #expect(lim.liveAllocations(of: "127.0.0.2") == 1, "only the allocation that succeeded is held")
        r.release(app: "a", nameplate: first, side: "s0", now: 2)
        lim.allocationEnded(from: "127.0.0.2")
        _ = try await allocate("again", at: 2)
        #expect(lim.liveAllocations(of: "127.0.0.2") == 1)
    }

    @Test("refused allocations cannot fill the limiter's table: one from each of many addresses while nameplates are full")
    func refusedAllocationsDoNotFillTheTable() async throws {
        let full = WormholeRendezvous(maximumNameplates: 0)
        let lim = WormholeAddressLimiter(maximumAddresses: 64)
        for i in 0..<1000 {
            let address = "10.0.\(i / 256).\(i % 256)"
            await #expect(throws: RendezvousRefusal.serverFull("the server has no room for another nameplate")) {
                try await lim.allocating(from: address, now: 0) { () throws(RendezvousRefusal) in
                    try full.allocate(app: "a", side: "s", now: 0, address: address)
                }
            }
        }
        #expect(lim.trackedAddresses <= 64)
        // A newcomer is not told the server is busy (before the fix every entry held an allocation for ever).
        try lim.allow(.claim, from: "192.0.2.1", now: 1)
        try lim.allow(.allocate, from: "192.0.2.2", now: 1)
    }

    @Test(.requires(HubProcess.wormholeVenv, HubProcess.server),
          .timeLimit(.minutes(8)))
    func stockClientsThroughTheHubAlone() async throws {
        let bin = try TransitRelayTests.wormholeBin()
        let o = try await HubProcess.run(bin + "/python", [HubProcess.packageRoot + "/Tests/scripts/transit_wormhole.py",
                                                           bin, HubProcess.binary, "--rendezvous", "hub", "--texts", "4", "--files", "2"],
                                         timeout: 450)
        print(o.stdoutText.split(separator: "\n").suffix(8).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}
