import Foundation
import ModemCrypto
import ModemWormhole
import Testing
import ModemRuntime

/// Our SPAKE2 and key schedule against python-spake2 0.9 and magic-wormhole 0.24 on fixed inputs:
/// Fixtures/wormhole/spake2-vectors.json, written by Tests/scripts/make_spake2_vectors.py from the
/// Python packages themselves (the blinding elements, both sides' messages and keys for five cases,
/// a wrong password among them, then the derived transit and phase keys and a secretbox).
@Suite struct SPAKE2VectorTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let vectors: JSONValue = {
        let data = (try? Data(contentsOf: root.appendingPathComponent("Fixtures/wormhole/spake2-vectors.json"))) ?? Data()
        return JSONValue.parse(Array(data)) ?? .null
    }()

    func hex(_ v: JSONValue?) -> [UInt8] { v?.string.flatMap { Hex.decode($0) } ?? [] }

    @Test func blindingElementsArePythonSpake2s() {
        #expect(Hex.encode(SPAKE2Ed25519.m) == Self.vectors["M"]?.string)
        #expect(Hex.encode(SPAKE2Ed25519.n) == Self.vectors["N"]?.string)
        #expect(Hex.encode(SPAKE2Ed25519.s) == Self.vectors["S"]?.string)
    }

    @Test func messagesAndKeysMatchPythonSpake2() throws {
        let cases = try #require(Self.vectors["cases"]?.array)
        #expect(cases.count == 5)
        for c in cases {
            let pwA = Array((c["password_a"]?.string ?? "").utf8), pwB = Array((c["password_b"]?.string ?? "").utf8)
            let id = Array((c["identity"]?.string ?? "").utf8)
            let a = try SPAKE2Symmetric(password: pwA, identity: id, entropy: hex(c["entropy_a"]))
            let b = try SPAKE2Symmetric(password: pwB, identity: id, entropy: hex(c["entropy_b"]))
            #expect(a.outboundMessage == hex(c["message_a"]))
            #expect(b.outboundMessage == hex(c["message_b"]))
            // Each side finishes with python's message of the other side.
            let ka = try a.finish(hex(c["message_b"])), kb = try b.finish(hex(c["message_a"]))
            #expect(ka == hex(c["key_a"]) && kb == hex(c["key_b"]))
            #expect((ka == kb) == (pwA == pwB), "the keys agree exactly when the passwords do")
        }
    }

    @Test func refusals() throws {
        let a = try SPAKE2Symmetric(password: Array("1-a-b".utf8), identity: [])
        #expect(throws: SPAKE2Error.self) { try a.finish(a.outboundMessage) }                       // reflected
        #expect(throws: SPAKE2Error.self) { try a.finish([0x41] + a.outboundMessage.dropFirst()) }  // side A
        #expect(throws: SPAKE2Error.self) { try a.finish([0x53] + Ed25519Group.identity) }          // the identity
        #expect(throws: SPAKE2Error.self) { try a.finish([0x53] + [UInt8](repeating: 0xFF, count: 32)) }
        #expect(throws: SPAKE2Error.self) { try a.finish(Array(a.outboundMessage.prefix(20))) }
    }

    @Test func keyScheduleMatchesMagicWormhole() throws {
        let d = try #require(Self.vectors["derived"])
        let key = hex(d["key"])
        #expect(WormholeKeys.derive(key, purpose: "lothar.com/wormhole/text-or-file-xfer/transit-key") == hex(d["transit_key"]))
        let phase = WormholeKeys.phaseKey(key, side: "0123456789", phase: "version")
        #expect(phase == hex(d["phase_key_side_0123456789_version"]))
        let sealed = hex(d["sealed_hello_with_nonce_00_to_17"])
        #expect(try WormholeKeys.open(sealed, key: phase) == Array("hello".utf8))
        #expect(try SecretBox.seal(Array("hello".utf8), key: phase, nonce: Array(0..<24)) == Array(sealed.dropFirst(24)))
        var changed = sealed
        changed[30] ^= 1
        #expect(throws: CryptoError.self) { try WormholeKeys.open(changed, key: phase) }
    }
}

/// The small parsers of the wormhole client: codes, URLs, hints, JSON, hex, transit lines.
@Suite struct WormholeParsingTests {
    @Test func codes() throws {
        let c = try WormholeCode("7-guitarist-revenge")
        #expect(c.nameplate == "7" && c.text == "7-guitarist-revenge")
        #expect(!c.description.contains("guitarist"), "a code printed as a value hides its words")
        for bad in ["", "7", "x-a-b", "7--b", "7-a b", "-a-b", "7-a-\u{1B}"] {
            #expect(throws: WormholeError.self, "\(bad.debugDescription)") { try WormholeCode(bad) }
        }
        let r = WormholeCode.random(nameplate: "12")
        let words = r.text.split(separator: "-")
        #expect(words.count == 3 && words[0] == "12" && PGPWordList.odd.contains(String(words[1])) && PGPWordList.even.contains(String(words[2])))
    }

    @Test func urls() throws {
        let u = try WebSocketURL("ws://127.0.0.1:4000/wormhole/v1")
        #expect(u.host == "127.0.0.1" && u.port == 4000 && u.path == "/wormhole/v1")
        #expect(try WebSocketURL("ws://[::1]:5/v1").host == "::1")
        #expect(try WebSocketURL("ws://relay.example").port == 80)
        let s = try WebSocketURL("wss://relay.example/v1")
        #expect(s.secure && s.port == 443 && s.host == "relay.example" && s.trust == .system && s.description == "wss://relay.example:443/v1")
        #expect(try WebSocketURL("WSS://[::1]:8443").port == 8443)
        #expect(try !WebSocketURL("ws://relay.example/v1").secure)
        for bad in ["http://x/v1", "wss://", "wss://x:0/", "ws://:80/", "ws://x:0/", "ws://x:99999/", "ws://x/a b"] {
            #expect(throws: WormholeError.self, "\(bad)") { try WebSocketURL(bad) }
        }
    }

    @Test func hintsRoundTripAndJunkIsSkipped() throws {
        let h = TransitHints(direct: [TransitHint(host: "192.0.2.1", port: 4001)], relays: [TransitHint(host: "relay.example", port: 4001)])
        #expect(TransitHints(message: try #require(JSONValue.parse(h.message.text))) == h)
        let junk = JSONValue.parse(#"{"hints-v1": [{"type": "tor-tcp-v1", "hostname": "x.onion", "port": 1}, {"type": "direct-tcp-v1", "hostname": "a b", "port": 1}, {"type": "direct-tcp-v1", "hostname": "h", "port": 70000}, 5, {"type": "relay-v1", "hints": "no"}]}"#)!
        #expect(TransitHints(message: junk) == TransitHints())
        #expect(try TransitHint(helper: "tcp:127.0.0.1:4001") == TransitHint(host: "127.0.0.1", port: 4001))
        for bad in ["127.0.0.1:4001", "tcp:host", "tcp::4001", "tcp:h:0"] {
            #expect(throws: WormholeError.self, "\(bad)") { try TransitHint(helper: bad) }
        }
    }

    @Test func transitLines() {
        let k = TransitKeys(key: [UInt8](repeating: 7, count: 32))
        let s = String(decoding: k.senderHandshake, as: UTF8.self), r = String(decoding: k.receiverHandshake, as: UTF8.self)
        #expect(s.hasPrefix("transit sender ") && s.hasSuffix(" ready\n\n") && s.count == 15 + 64 + 8)
        #expect(r.hasPrefix("transit receiver ") && r.hasSuffix(" ready\n\n"))
        let relay = String(decoding: k.relayHandshake(side: "0011223344556677"), as: UTF8.self)
        #expect(relay.hasPrefix("please relay ") && relay.hasSuffix(" for side 0011223344556677\n") && relay.count == 13 + 64 + 10 + 16 + 1)
        #expect(k.senderRecordKey != k.receiverRecordKey)
    }

    @Test func hexAndJSON() {
        #expect(Hex.decode("00ff10") == [0, 255, 16] && Hex.decode("0") == nil && Hex.decode("zz") == nil)
        #expect(Hex.encode([1, 171]) == "01ab")
        let v: JSONValue = ["b": [1, "x"], "a": .null]
        #expect(v.text == #"{"a":null,"b":[1,"x"]}"#)
        #expect(JSONValue.parse("{") == nil && JSONValue.parse([UInt8](repeating: 0x20, count: 10), maximumBytes: 5) == nil)
    }
}
