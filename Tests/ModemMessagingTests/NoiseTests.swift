import ModemCrypto
import Foundation
import ModemMessaging
import Testing

/// The repository's root (for Fixtures/ and Tests/scripts/).
let messagingPackageRoot: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

struct NoiseVectorFile: Decodable {
    struct Message: Decodable {
        var payload: String
        var ciphertext: String
    }
    struct Vector: Decodable {
        var name: String
        var prologue: String
        var init_static: String
        var resp_static: String
        var init_ephemeral: String
        var resp_ephemeral: String
        var messages: [Message]
    }
    var vectors: [Vector]
}

func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func privateKey(_ hex: String) throws -> X25519PrivateKey {
    try X25519PrivateKey(rawRepresentation: hexBytes(hex))
}

@Suite("Noise XX")
struct NoiseTests {
    static func vectors(_ cipher: NoiseCipher) throws -> [NoiseVectorFile.Vector] {
        let file = cipher == .chaChaPoly ? "xx_25519_chachapoly_sha256.json" : "xx_25519_aesgcm_sha256.json"
        let data = try Data(contentsOf: URL(fileURLWithPath: messagingPackageRoot + "/Fixtures/noise/" + file))
        return try JSONDecoder().decode(NoiseVectorFile.self, from: data).vectors
    }

    /// ChaChaPoly: the published vectors. AESGCM (what sessions use): the same handshakes made by the
    /// independent Python noiseprotocol (Tests/scripts/make_noise_vectors.py).
    @Test("Noise_XX_25519_{ChaChaPoly,AESGCM}_SHA256 vectors, message by message, both directions", arguments: NoiseCipher.allCases)
    func publishedVectors(cipher: NoiseCipher) throws {
        let vectors = try Self.vectors(cipher)
        #expect(vectors.count == 3)
        for v in vectors {
            #expect(v.name.hasPrefix(HandshakeState.protocolName(cipher)))
            var initiator = HandshakeState(initiator: true, prologue: hexBytes(v.prologue), staticKey: try privateKey(v.init_static),
                                           ephemeralKey: try privateKey(v.init_ephemeral), cipher: cipher)
            var responder = HandshakeState(initiator: false, prologue: hexBytes(v.prologue), staticKey: try privateKey(v.resp_static),
                                           ephemeralKey: try privateKey(v.resp_ephemeral), cipher: cipher)
            for index in 0..<3 {
                let message = v.messages[index]
                let payload = hexBytes(message.payload)
                let written: [UInt8]
                let read: [UInt8]
                if index % 2 == 0 {
                    written = try initiator.writeMessage(payload: payload)
                    read = try responder.readMessage(written)
                } else {
                    written = try responder.writeMessage(payload: payload)
                    read = try initiator.readMessage(written)
                }
                #expect(hexString(written) == message.ciphertext, "\(v.name) message \(index)")
                #expect(read == payload)
            }
            #expect(initiator.isComplete && responder.isComplete)
            #expect(initiator.handshakeHash == responder.handshakeHash)
            #expect(initiator.remoteStatic == Array(try privateKey(v.resp_static).publicKey.rawRepresentation))
            #expect(responder.remoteStatic == Array(try privateKey(v.init_static).publicKey.rawRepresentation))
            var (iSend, iReceive) = try initiator.split()
            var (rSend, rReceive) = try responder.split()
            let m3 = try iSend.encrypt(ad: [], plaintext: hexBytes(v.messages[3].payload))
            #expect(hexString(m3) == v.messages[3].ciphertext)
            #expect(try rReceive.decrypt(ad: [], ciphertext: m3) == hexBytes(v.messages[3].payload))
            let m4 = try rSend.encrypt(ad: [], plaintext: hexBytes(v.messages[4].payload))
            #expect(hexString(m4) == v.messages[4].ciphertext)
            #expect(try iReceive.decrypt(ad: [], ciphertext: m4) == hexBytes(v.messages[4].payload))
        }
    }

    @Test("another prologue, a changed byte or a truncated message fails and leaves the state usable")
    func failures() throws {
        let a = X25519PrivateKey(), b = X25519PrivateKey()
        var i = HandshakeState(initiator: true, prologue: [1], staticKey: a)
        var r = HandshakeState(initiator: false, prologue: [2], staticKey: b)
        _ = try r.readMessage(try i.writeMessage(payload: []))
        #expect(throws: NoiseError.self) { _ = try i.readMessage(try r.writeMessage(payload: [9])) }

        var i2 = HandshakeState(initiator: true, prologue: [], staticKey: a)
        var r2 = HandshakeState(initiator: false, prologue: [], staticKey: b)
        _ = try r2.readMessage(try i2.writeMessage(payload: []))
        var m2 = try r2.writeMessage(payload: Array("hello".utf8))
        m2[40] ^= 1
        #expect(throws: NoiseError.self) { _ = try i2.readMessage(m2) }
        #expect(throws: NoiseError.self) { _ = try i2.readMessage(Array(m2.prefix(40))) }
        m2[40] ^= 1
        #expect(try i2.readMessage(m2) == Array("hello".utf8))
        #expect(throws: NoiseError.self) { _ = try i2.readMessage(m2) }  // out of turn
        #expect(throws: NoiseError.self) { _ = try i2.split() }
    }

    @Test("a low-order ephemeral key is refused")
    func lowOrderEphemeral() throws {
        var r = HandshakeState(initiator: false, prologue: [], staticKey: .init())
        _ = try r.readMessage([UInt8](repeating: 0, count: 32))
        #expect(throws: NoiseError.self) { _ = try r.writeMessage(payload: []) }
    }

    @Test("the nonce advances; a transport message decrypts once, in order", arguments: NoiseCipher.allCases)
    func transportNonces(cipher: NoiseCipher) throws {
        let key = [UInt8](repeating: 7, count: 32)
        var sender = CipherState(key: key, cipher: cipher), receiver = CipherState(key: key, cipher: cipher)
        let c0 = try sender.encrypt(ad: [1], plaintext: [1, 2, 3])
        let c1 = try sender.encrypt(ad: [1], plaintext: [1, 2, 3])
        #expect(c0 != c1)
        #expect(c0.count == 3 + 16)
        #expect(throws: NoiseError.self) { _ = try receiver.decrypt(ad: [1], ciphertext: c1) }
        #expect(try receiver.decrypt(ad: [1], ciphertext: c0) == [1, 2, 3])
        #expect(throws: NoiseError.self) { _ = try receiver.decrypt(ad: [2], ciphertext: c1) }
        #expect(try receiver.decrypt(ad: [1], ciphertext: c1) == [1, 2, 3])
        sender.setNonce(UInt64.max)
        #expect(throws: NoiseError.self) { _ = try sender.encrypt(ad: [], plaintext: []) }
    }

    @Test("HKDF of the spec: known answer from HMAC-SHA256 by hand")
    func hkdf() {
        let ck = [UInt8](repeating: 1, count: 32), ikm = [UInt8](repeating: 2, count: 32)
        let (o1, o2, o3) = SymmetricState.hkdf(chainingKey: ck, inputKeyMaterial: ikm, outputs: 3)
        let temp = HMACSHA256.code(for: ikm, key: ck)
        #expect(o1 == HMACSHA256.code(for: [1], key: temp))
        #expect(o2 == HMACSHA256.code(for: o1 + [2], key: temp))
        #expect(o3 == HMACSHA256.code(for: o2 + [3], key: temp))
    }
}
