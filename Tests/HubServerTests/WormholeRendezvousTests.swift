import Foundation
import HubServer
import Synchronization
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
        #expect(throws: WormholeError("crowded")) { try r.claim(app: "app", nameplate: n1, side: "c", now: 1) }
        #expect(throws: WormholeError("nameplate must be digits")) { try r.claim(app: "app", nameplate: "x1", side: "c", now: 1) }
        #expect(throws: WormholeError("the server has no room for another nameplate")) {
            try r.claim(app: "app", nameplate: "77", side: "c", now: 1)
        }
        r.release(app: "app", nameplate: n1, side: "a", now: 2)
        #expect(throws: WormholeError("reclaimed")) { try r.claim(app: "app", nameplate: n1, side: "a", now: 2) }
        r.release(app: "app", nameplate: n1, side: "b", now: 2)
        #expect(r.nameplates(app: "app") == ["2"])                              // freed when both released

        // Listeners get what came before, then every message, their own included.
        let seen = Mutex<[String]>([])
        try r.add(app: "app", mailbox: m, message: WormholeMessage(side: "a", phase: "pake", body: "00", serverRx: 3, id: "i1"))
        let h = try r.open(app: "app", mailbox: m, side: "b", now: 3) { msg in seen.withLock { $0.append(msg.side + msg.phase) } }
        try r.add(app: "app", mailbox: m, message: WormholeMessage(side: "b", phase: "pake", body: "01", serverRx: 4, id: nil))
        #expect(seen.withLock { $0 } == ["apake", "bpake"])
        #expect(throws: WormholeError("this mailbox holds 2 messages already")) {
            try r.add(app: "app", mailbox: m, message: WormholeMessage(side: "a", phase: "0", body: "", serverRx: 5, id: nil))
        }
        #expect(throws: WormholeError("crowded")) { try r.open(app: "app", mailbox: m, side: "c", now: 5) { _ in } }
        r.stopListening(app: "app", mailbox: m, handle: h)
        // The mailbox goes when both sides that opened it closed it.
        try r.close(app: "app", mailbox: m, side: "a", now: 6)
        try r.close(app: "app", mailbox: m, side: "b", now: 6)
        #expect(throws: WormholeError("no such mailbox")) {
            try r.add(app: "app", mailbox: m, message: WormholeMessage(side: "a", phase: "0", body: "", serverRx: 7, id: nil))
        }
        // At most maximumMailboxBytes of bodies per mailbox.
        let small = WormholeRendezvous(maximumMailboxBytes: 10)
        let mb = try small.claim(app: "app", nameplate: "5", side: "a", now: 0)
        try small.add(app: "app", mailbox: mb, message: WormholeMessage(side: "a", phase: "pake", body: "0123456789", serverRx: 1, id: nil))
        #expect(throws: WormholeError("this mailbox holds 10 bytes of messages already")) {
            try small.add(app: "app", mailbox: mb, message: WormholeMessage(side: "a", phase: "version", body: "0", serverRx: 2, id: nil))
        }
        // Idle nameplates and mailboxes expire.
        let gone = r.expire(now: 1000)
        #expect(gone.nameplates == 2 && r.nameplates(app: "app").isEmpty && r.nameplates(app: "other").isEmpty)
    }

    @Test(.enabled(if: (FileManager.default.isExecutableFile(atPath: TransitRelayTests.wormholeBin + "/wormhole")
                        && FileManager.default.isExecutableFile(atPath: HubProcess.binary)) || HubProcess.peersRequired,
                   "no .build/wormhole-venv (scripts/wormhole-venv.sh) or no built modem-hub"),
          .timeLimit(.minutes(8)))
    func stockClientsThroughTheHubAlone() async throws {
        let bin = TransitRelayTests.wormholeBin
        let o = try await HubProcess.run(bin + "/python", [HubProcess.packageRoot + "/Tests/scripts/transit_wormhole.py",
                                                           bin, HubProcess.binary, "--rendezvous", "hub", "--texts", "10", "--files", "3"],
                                         timeout: 450)
        print(o.stdoutText.split(separator: "\n").suffix(8).joined(separator: "\n"))
        #expect(o.status == 0, "\(o.stdoutText.suffix(3000))\(o.stderrText.suffix(2000))")
        #expect(o.stdoutText.contains(" passed, 0 failed"), "\(o.stdoutText.suffix(3000))")
    }
}
