import Foundation
import ModemCrypto
import ModemMessaging
import Synchronization
import Testing

/// A peer is named by the name its key is trusted under here, never by the name it claims (issue 32,
/// defect 12): with Bob's key trusted as `bob`, Bob announcing `the-boss` is still `bob` to Alice in
/// the session, the mailbox's and the data connections' events, with the claim beside it.
@Suite("Peer identity: the trusted name, not the claimed one")
struct PeerIdentityTests {
    @Test("the description is the trusted name, with a different claim beside it, quoted; an untrusted key is its fingerprint")
    func description() {
        let key = [UInt8](repeating: 7, count: 32)
        #expect(PeerIdentity(publicKey: key, trustedName: "bob", claimedName: "bob").description == "bob")
        #expect(PeerIdentity(publicKey: key, trustedName: "bob", claimedName: "").description == "bob")
        #expect(PeerIdentity(publicKey: key, trustedName: "bob", claimedName: "the-boss").description == "bob (claims \"the-boss\")")
        let untrusted = PeerIdentity(publicKey: key, trustedName: nil, claimedName: "bob")
        #expect(!untrusted.isTrusted)
        #expect(untrusted.description == "untrusted key \(keyFingerprint(key)) (claims \"bob\")")
        // A claim cannot close its quotes and pass for more of the line.
        let sly = PeerIdentity(publicKey: key, trustedName: "bob", claimedName: "x\") (trusted \"alice")
        #expect(sly.description == #"bob (claims "x\") (trusted \"alice")"#)
        #expect(PeerIdentity(publicKey: key, trustedName: "bob", claimedName: "a\u{1B}[2Jb").description == "bob (claims \"a?[2Jb\")")
        #expect(untrusted.keyFingerprint == keyFingerprint(key))
    }

    @Test("session machines: each end names the other by its own trust entry; the announced names are claims")
    func sessionMachines() {
        var p = MachinePair(trustAtA: [TrustedPeer(name: "bob", publicKey: MachinePair.publicB)],
                            trustAtB: [TrustedPeer(name: "alice", publicKey: MachinePair.publicA)],
                            userNames: ("root@vm", "the-boss"))
        p.start()
        let atA = MachinePair.established(p.actionsA), atB = MachinePair.established(p.actionsB)
        #expect(atA == PeerIdentity(publicKey: MachinePair.publicB, trustedName: "bob", claimedName: "the-boss"))
        #expect(atB == PeerIdentity(publicKey: MachinePair.publicA, trustedName: "alice", claimedName: "root@vm"))
        #expect(atA?.description == "bob (claims \"the-boss\")")
        #expect(atB?.description == "alice (claims \"root@vm\")")
    }

    @Test("a peer claiming another trusted peer's name is still named by its own key's entry")
    func claimingAnotherName() {
        let carol = Array(X25519PrivateKey().publicKey.rawRepresentation)
        var p = MachinePair(trustAtA: [TrustedPeer(name: "carol", publicKey: carol), TrustedPeer(name: "bob", publicKey: MachinePair.publicB)],
                            userNames: ("alice", "carol"))
        p.start()
        let atA = MachinePair.established(p.actionsA)
        #expect(atA?.trustedName == "bob")
        #expect(atA?.description == "bob (claims \"carol\")")
    }

    @Test("over TCP with two key stores: the Noise session, the mailbox's connected event and the data connection's file offer name Bob as trusted",
          .timeLimit(.minutes(1)))
    func mailboxAndDataOverNoise() async throws {
        let keys = try keyPair()
        let bobKey = try keys.1.publicKey()
        // The mailbox.
        do {
            let (ra, rb) = try await sessionPair(keys: keys, userNames: ("root@vm", "the-boss"))
            let a = try ra.get(), b = try rb.get()
            #expect(a.peer.trustedName == "bob" && a.peer.claimedName == "the-boss" && a.peer.publicKey == bobKey)
            #expect(b.peer.trustedName == "alice" && b.peer.claimedName == "root@vm")
            let alice = Mailbox(userName: "root@vm"), bob = Mailbox(userName: "the-boss")
            await alice.start(session: a)
            await bob.start(session: b)
            var connected: PeerIdentity?
            for await event in alice.events {
                if case .connected(let peer) = event { connected = peer; break }
            }
            #expect(connected?.trustedName == "bob")
            #expect(connected?.description == "bob (claims \"the-boss\")")
            #expect(await alice.peer?.trustedName == "bob")
            await alice.disconnectNow()
            await bob.disconnectNow()
        }
        // Data connections: the file offer names the sender by trusted name.
        do {
            let (ra, rb) = try await sessionPair(keys: keys, userNames: ("root@vm", "the-boss"))
            let a = try ra.get(), b = try rb.get()
            let dir = dataTestFolder("identity")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let source = dir + "-src.bin"
            writeTestFile(atPath: source, contents: Data(dataTestBytes(1000, seed: 3)))
            defer { try? FileManager.default.removeItem(atPath: source) }
            let offers = Mutex<[FileOffer]>([])
            var config = smallBlocks(folder: try ReceiveFolder(path: dir))
            config.fileDecider = { offer in offers.withLock { $0.append(offer) }; return true }
            let receiver = DataConnections(session: a, configuration: config)
            let sender = DataConnections(session: b, configuration: smallBlocks())
            let events = collect(receiver) { if case .fileReceived = $0 { true } else { false } }
            let id = try await sender.start()
            _ = try await sender.sendFile(path: source, as: "doc.bin", on: id)
            _ = await events.value
            let offer = offers.withLock { $0.first }
            #expect(offer?.peer.trustedName == "bob")
            #expect(offer?.peer.claimedName == "the-boss")
            #expect(offer?.peer.description == "bob (claims \"the-boss\")")
            #expect(receiver.peer.trustedName == "bob" && sender.peer.trustedName == "alice")
            _ = await sender.close()
            _ = await receiver.ended()
        }
    }

    @Test("the mailbox over an in-memory pair reports the peer identity given, trusted name and claim apart")
    func mailboxInMemory() async throws {
        let bob = PeerIdentity(publicKey: [UInt8](repeating: 2, count: 32), trustedName: "bob", claimedName: "the-boss")
        let alice = PeerIdentity(publicKey: [UInt8](repeating: 1, count: 32), trustedName: "alice", claimedName: "alice")
        let (sa, sb) = InMemorySessionLine.pair(a: alice, b: bob)
        let ma = Mailbox(userName: "alice"), mb = Mailbox(userName: "the-boss")
        await ma.start(session: sa)
        await mb.start(session: sb)
        var seen: PeerIdentity?
        for await event in ma.events {
            if case .connected(let peer) = event { seen = peer; break }
        }
        #expect(seen == bob)
        #expect(seen?.description == "bob (claims \"the-boss\")")
        await ma.disconnectNow()
        await mb.disconnectNow()
    }

    @Test("one name names one key: trusting a name another key holds is refused; pairing never takes it either")
    func oneNameOneKey() throws {
        let store = try KeyStore(folder: temporaryKeysPath("names"))
        let bob = Array(X25519PrivateKey().publicKey.rawRepresentation)
        let mallory = Array(X25519PrivateKey().publicKey.rawRepresentation)
        try store.trust(name: "bob", publicKey: bob)
        #expect(throws: KeyStoreError.self) { try store.trust(name: "bob", publicKey: mallory) }
        do {
            try store.trust(name: "bob", publicKey: mallory)
        } catch {
            #expect(error.kind == .nameTaken && error.description.contains(keyFingerprint(bob)), "\(error)")
        }
        #expect(try store.trustEntry(for: bob)?.name == "bob" && store.trustEntry(for: mallory) == nil)
        // The same key under the same name again is fine (an update).
        try store.trust(name: "bob", publicKey: bob)
        // Pairing: a claim of a name another key holds gives the fallback; a free valid claim is used;
        // an invalid one gives the fallback; a key trusted already keeps its name.
        #expect(try store.trustPaired(claimedName: "bob", publicKey: mallory, fallback: "paired-123456") == "paired-123456")
        #expect(try store.trustEntry(for: bob)?.name == "bob")
        let carol = Array(X25519PrivateKey().publicKey.rawRepresentation)
        #expect(try store.trustPaired(claimedName: "carol", publicKey: carol, fallback: "paired-000001") == "carol")
        let dave = Array(X25519PrivateKey().publicKey.rawRepresentation)
        #expect(try store.trustPaired(claimedName: "root@vm", publicKey: dave, fallback: "paired-123456") == "paired-123456-2")
        #expect(try store.trustPaired(claimedName: "the-boss", publicKey: bob, fallback: "paired-999999") == "bob")
        #expect(try store.trustedPeers().map(\.name).sorted() == ["bob", "carol", "paired-123456", "paired-123456-2"])
        // Names that differ only in case are one name: "Bob" cannot stand beside "bob" for another key.
        let eve = Array(X25519PrivateKey().publicKey.rawRepresentation)
        #expect(throws: KeyStoreError.self) { try store.trust(name: "BOB", publicKey: eve) }
        #expect(try store.trustPaired(claimedName: "Bob", publicKey: eve, fallback: "paired-424242") == "paired-424242")
    }

    @Test("text from a peer is made safe for a terminal: controls, C1 (CSI), bidirectional overrides")
    func terminalText() {
        #expect(TerminalText.safe("a\u{1B}[2Jb\u{9B}31mc\u{202E}d\u{2066}e\nf") == "a?[2Jb?31mc?d?e?f")
        #expect(TerminalText.safe("plain ünïcödé 日本") == "plain ünïcödé 日本")
        #expect(TerminalText.safe("abcdef", maximumScalars: 3) == "abc")
        let boss = PeerIdentity(publicKey: Array(repeating: 1, count: 32), trustedName: "bob", claimedName: "x\u{202E}y\u{9B}")
        #expect(boss.description == "bob (claims \"x?y?\")")
        #expect(throws: Never.self) { try NameCleaner.clean("report\u{202E}fdp.exe") }
        #expect((try? NameCleaner.clean("report\u{202E}fdp.exe")) == "reportfdp.exe")
    }
}
